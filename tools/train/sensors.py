"""The lidar settings the model is trained and evaluated on, and the points
files pointcloudtestsrc's frames are written to.  (torch is imported only
to read points: the data generation runs without it.)"""

# pointcloudtestsrc properties of each sensor (docs/elements/
# pointcloudtestsrc.md): its default, near a KITTI HDL-64E, and the 32-beam
# HDL-32E setting of nuScenes
SENSORS = {
    "64": [],
    "32": ["beams=32", "fov-up=10", "fov-down=-30",
           "points-per-revolution=1084"],
}

# the point format fed to voxelize in training and at inference: x, y, z,
# intensity (so pillarfeat's mmdet3d-11 channel c4 is always 0)
POINT_FORMAT = "xyzi"
POINT_CHANNELS = 4


def read_points(path, channels=POINT_CHANNELS):
    """A points file (float32 little-endian, @channels a point) as an
    [N][channels] float32 tensor."""
    import torch

    with open(path, "rb") as stream:
        data = bytearray(stream.read())
    if len(data) % (4 * channels):
        raise ValueError("%s: %d bytes is not a whole number of points"
                         % (path, len(data)))
    if not data:
        return torch.zeros((0, channels), dtype=torch.float32)
    return torch.frombuffer(data, dtype=torch.float32).reshape(-1, channels)
