"""The humanoid rig: bone table (bones.py) and the solver from 3D keypoints to bone
rotations with forward kinematics and a live solver (solver.py); the face reader
(face.py: ARKit weights and head rotation from the face keypoints, FaceStage), lifting
2D keypoints to 3D between depth frames (lift.py), the pointmap's per-frame scale stabilised
against the person's bone lengths (scale.py), and the floor, foot contact and foot locking
(ground.py, GroundStage: 3D keypoints at pose rate and contacts for the tracks). Used live by
the VMC sinks and offline by the BVH/glTF exporters."""
