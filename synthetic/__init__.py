"""Synthetic test data with known ground truth, for tests, benchmarks and docs only
(not installed with the package): people, dense maps and tracking scenes.

    synthetic.people    308-keypoint people, body-part maps, depth and normals to draw
    synthetic.tracking  moving people with identities, for the identity tracker
"""
