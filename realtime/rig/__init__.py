"""The humanoid rig: bone table (bones.py) and the solver from 3D keypoints to bone
rotations with forward kinematics and a live solver (solver.py); the face reader
(face.py: ARKit weights and head rotation from the face keypoints, FaceStage), lifting
2D keypoints to 3D between depth frames (lift.py), the pointmap's per-frame scale stabilised
against the person's bone lengths (scale.py), the floor (floor.py; its tilt from the scene:
floor_scene.py), foot contact (contacts.py) and foot locking (lock.py; offline: leg_ik.py), their gates
in seconds and metres (gates.py); the camera's egomotion and the world frame (egomotion.py, world.py).
Used live by the ground, world and motion stages and offline by the BVH/glTF exporters."""
