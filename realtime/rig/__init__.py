"""The humanoid rig: bone table (bones.py) and the solver from 3D keypoints to bone
rotations with forward kinematics and a live solver (solver.py). Used live by the VMC
sinks and offline by the BVH/glTF exporters."""
