"""voxelize (pillars) and pillarfeat (mmdet3d-11) in PyTorch, byte for byte.

The training script feeds the network through this module instead of
running the elements on every frame; check_pillarize.py proves, on frames of
pointcloudtestsrc, that it gives exactly the bytes that `voxelize !
pillarfeat features=mmdet3d-11` write.  The rules it copies (cuda/voxelize.h,
cuda/pillarfeat.h):

- voxelize: a point's cell is q = (p - range_min) / voxel_size, one float32
  subtraction and one float32 division per axis; the point is kept when
  0 <= q < grid on every axis (NaN and infinities fail that test), its cell
  index is q truncated.  grid = round((max - min) / size) in double, halves
  away from zero (C's round).  Voxels are numbered in the order of their
  first point, a voxel's points keep their input order, the first
  max_points points of a voxel and the first max_voxels voxels are kept.
  Coordinates are (0, z, y, x).
- pillarfeat mmdet3d-11, float32, every operation rounded on its own:
  x, y, z, c3, c4 (the point's channels 3 and 4, 0 where the format has
  fewer), x - mean_x, y - mean_y, z - mean_z, x - center_x, y - center_y,
  z - center_z, with mean_x = (((0 + x_0) + x_1) + ...) / (float) n over the
  voxel's n kept points and center_x = (float) coord_x * size_x + offset_x,
  offset_x = (float) (size_x / 2 + min_x) computed in double.  Unused point
  slots are +0.  F16 output is the F32 value rounded to nearest even.

Several frames go through at once (the batch of a training step): a frame's
points are a contiguous run of the input, and voxel numbering and the caps
apply to each frame on its own, as if each went through the elements alone.
Element-wise torch operations are IEEE float32 on the CPU and on CUDA; do not
run this module under torch.compile (it may fuse a multiply and an add).
"""

import math

import torch

FEATURES = 11  # mmdet3d-11


def c_round(value):
    """C's round() for the positive grid extents: halves away from zero."""
    return int(math.floor(value + 0.5))


class PillarGrid:
    """The parameters voxelize and pillarfeat are given, as floats the way
    the C code converts them."""

    def __init__(self, voxel_size, point_cloud_range, max_points, max_voxels):
        self.voxel_size = [float(v) for v in voxel_size]
        self.range = [float(v) for v in point_cloud_range]
        self.max_points = int(max_points)
        self.max_voxels = int(max_voxels)
        self.grid = [c_round((self.range[3 + a] - self.range[a])
                             / self.voxel_size[a]) for a in range(3)]
        if self.grid[2] != 1:
            raise ValueError("pillars need one z cell, the grid has %d"
                             % self.grid[2])
        # one rounding of the exact half-cell position, as pillarfeat does
        self.center_offset = [self.voxel_size[a] / 2.0 + self.range[a]
                              for a in range(3)]

    def tensors(self, device):
        f32 = dict(dtype=torch.float32, device=device)
        return (torch.tensor(self.range[:3], **f32),
                torch.tensor(self.voxel_size, **f32),
                torch.tensor([float(g) for g in self.grid], **f32),
                torch.tensor(self.center_offset, **f32))


def pillarize(points, frame_sizes, grid, half=False):
    """Voxelizes and featurizes the frames whose points are concatenated in
    @points ([N][C] float32, C >= 3; frame b is the next frame_sizes[b]
    rows).  Returns a dict of tensors on @points' device:
      features [V][max_points][11] float32 (float16 with @half),
      voxels [V][max_points][C] float32 (what voxelize stores),
      num_points [V] int64, coords [V][4] int64 (frame, z, y, x),
      voxel_counts [B] int64 (voxels of each frame, frame b's first),
    V the voxels of all frames, frame by frame in the elements' order."""
    device = points.device
    if points.dtype != torch.float32 or points.dim() != 2 \
            or points.shape[1] < 3:
        raise ValueError("points must be [N][C >= 3] float32")
    sizes = torch.as_tensor(frame_sizes, dtype=torch.int64, device=device)
    n_frames = sizes.numel()
    if int(sizes.sum()) != points.shape[0]:
        raise ValueError("frame sizes do not add up to the points")
    rmin, vsize, gridf, offset = grid.tensors(device)
    gx, gy, gz = grid.grid
    cells_per_frame = gx * gy * gz

    # the cell test of voxelize, in float32 before any integer conversion
    q = (points[:, :3] - rmin) / vsize
    inside = ((q >= 0) & (q < gridf)).all(dim=1)
    frame = torch.repeat_interleave(torch.arange(n_frames, device=device),
                                    sizes)
    kept = torch.nonzero(inside).squeeze(1)  # ascending: input order
    cell = q[kept].to(torch.int64)
    key = (frame[kept] * cells_per_frame
           + (cell[:, 2] * gy + cell[:, 1]) * gx + cell[:, 0])

    # group the points by cell, input order inside a group
    unique_keys, group, group_sizes = torch.unique(
        key, return_inverse=True, return_counts=True)
    group_sorted, by_group = torch.sort(group, stable=True)
    group_start = torch.cumsum(group_sizes, 0) - group_sizes
    first_point = by_group[group_start]
    # voxels are numbered by their first point; frames come in order, so
    # each frame's voxels are a contiguous run
    voxel_order = torch.argsort(first_point)
    voxel_of_group = torch.empty_like(voxel_order)
    voxel_of_group[voxel_order] = torch.arange(voxel_order.numel(),
                                               device=device)
    voxel_frame = frame[kept][first_point[voxel_order]]
    frame_voxels = torch.bincount(voxel_frame, minlength=n_frames)
    frame_first_voxel = torch.cumsum(frame_voxels, 0) - frame_voxels
    voxel_in_frame = (torch.arange(voxel_order.numel(), device=device)
                      - frame_first_voxel[voxel_frame])
    voxel_kept = voxel_in_frame < grid.max_voxels

    # a point's slot: its rank among its voxel's points
    slot = torch.empty_like(group)
    slot[by_group] = (torch.arange(group.numel(), device=device)
                      - group_start[group_sorted])
    point_voxel = voxel_of_group[group]
    point_kept = (slot < grid.max_points) & voxel_kept[point_voxel]

    # renumber the kept voxels densely, keeping their order
    new_index = torch.cumsum(voxel_kept.to(torch.int64), 0) - 1
    n_voxels = int(voxel_kept.sum())
    channels = points.shape[1]
    voxels = torch.zeros((n_voxels, grid.max_points, channels),
                         dtype=torch.float32, device=device)
    target = new_index[point_voxel[point_kept]]
    voxels[target, slot[point_kept]] = points[kept[point_kept]]
    num_points = torch.bincount(target, minlength=n_voxels)

    coords = torch.zeros((n_voxels, 4), dtype=torch.int64, device=device)
    voxel_cell = unique_keys[voxel_order][voxel_kept]
    coords[:, 0] = voxel_frame[voxel_kept]
    local = voxel_cell - coords[:, 0] * cells_per_frame
    coords[:, 3] = local % gx
    coords[:, 2] = (local // gx) % gy
    coords[:, 1] = local // (gx * gy)
    voxel_counts = torch.clamp(frame_voxels, max=grid.max_voxels)

    features = pillar_features(voxels, num_points, coords, vsize, offset)
    if half:
        features = features.to(torch.float16)
    return {"features": features, "voxels": voxels, "num_points": num_points,
            "coords": coords, "voxel_counts": voxel_counts}


def pillar_features(voxels, num_points, coords, vsize, offset):
    """pillarfeat's mmdet3d-11 features of padded voxels, float32."""
    n_voxels, max_points, channels = voxels.shape
    xyz = voxels[:, :, :3]
    # the mean as the C code sums it: point by point, in order; the zero
    # rows of unused slots add exactly nothing
    total = torch.zeros((n_voxels, 3), dtype=torch.float32,
                        device=voxels.device)
    for s in range(max_points):
        total = total + xyz[:, s]
    mean = total / num_points.to(torch.float32).unsqueeze(1)
    # (x, y, z) of the cell: coords are (frame, z, y, x)
    cell = coords[:, [3, 2, 1]].to(torch.float32)
    center = cell * vsize + offset
    extras = torch.zeros((n_voxels, max_points, 2), dtype=torch.float32,
                         device=voxels.device)
    extra_channels = min(channels - 3, 2)
    if extra_channels > 0:
        extras[:, :, :extra_channels] = voxels[:, :, 3:3 + extra_channels]
    features = torch.cat([xyz, extras, xyz - mean.unsqueeze(1),
                          xyz - center.unsqueeze(1)], dim=2)
    slots = torch.arange(max_points, device=voxels.device)
    used = (slots.unsqueeze(0) < num_points.unsqueeze(1)).unsqueeze(2)
    # +0 in the unused slots, never -0 (a product with 0 could give -0)
    return torch.where(used, features, torch.zeros((), dtype=torch.float32,
                                                   device=voxels.device))


def element_tensors(result, grid, frame):
    """The tensors that `voxelize ! filesink` and `pillarfeat ! filesink`
    write for frame @frame of a pillarize() result, padded to max_voxels,
    in the element's dtypes and order: (voxels tensors, features tensors),
    each a list of (name, tensor) on the CPU (docs/media-types.md)."""
    first = int(torch.sum(result["voxel_counts"][:frame]))
    count = int(result["voxel_counts"][frame])
    rows = slice(first, first + count)
    v, p = grid.max_voxels, grid.max_points
    channels = result["voxels"].shape[2]

    voxels = torch.zeros((v, p, channels), dtype=torch.float32)
    voxels[:count] = result["voxels"][rows].cpu()
    num_points = torch.zeros(v, dtype=torch.int32)
    num_points[:count] = result["num_points"][rows].cpu().to(torch.int32)
    coords = torch.zeros((v, 4), dtype=torch.int32)
    coords[:count] = result["coords"][rows].cpu().to(torch.int32)
    coords[:count, 0] = 0  # the elements' batch column
    features = torch.zeros((v, p, FEATURES), dtype=result["features"].dtype)
    features[:count] = result["features"][rows].cpu()
    # uint32 counts below 2^31 have the bits of the same int32
    count_tensor = torch.tensor([count], dtype=torch.int32)
    return ([("points", voxels), ("num-points", num_points),
             ("coords", coords), ("count", count_tensor)],
            [("features", features), ("coords", coords),
             ("count", count_tensor)])
