"""bevpool's view transform in PyTorch: the geometry of the frustum points
(which BEV cell each camera pixel at each depth bin falls in) and the sum
of feature x depth probability per cell, as the `bevpool` element computes
them (docs/elements/bevpool.md, docs/calibration.md), so that the camera
model is trained on the BEV features the pipeline will give it.

The geometry is computed in float64 with bevpool's operations in bevpool's
order (cuda/bevpool-private.h: the frustum coordinate, the inverse image
augmentation, the ray point, camera_to_lidar x inverse(K), the cell by
truncation toward zero or by floor), so every frustum point lands in the
cell the element gives it; check_lss_pool.py and tests/tools prove it
against the element.  The sum is float32 in another order than the
element's (which fixes its own, see bevpool.md): equal within rounding.

    rig = lss_pool.read_calibration("examples/data/rig-nuscenes-704x256.json")
    grid = lss_pool.BevGrid(xbound, ybound, zbound, dbound, (704, 256),
                            (44, 16))
    geometry = lss_pool.Geometry(rig, grid)       # numpy, on the host
    pool = lss_pool.Pool(geometry).to(device)     # a torch module
    bev = pool(depth, features)  # [B][N][D][H][W], [B][N][H][W][C]
                                 # -> [B][C x nz][ny][nx]

numpy is needed for the geometry, torch only for Pool; reading a
calibration file needs neither.
"""

import json
import math


def _matrix_rows(value, name, rows_wanted=(3, 4)):
    if not isinstance(value, list) or len(value) not in rows_wanted:
        raise ValueError("%s has %s rows, expected %s" % (
            name, len(value) if isinstance(value, list) else "no",
            " or ".join(str(r) for r in rows_wanted)))
    out = []
    for r, row in enumerate(value):
        if not isinstance(row, list) or len(row) not in rows_wanted:
            raise ValueError("%s[%d] is not a row of 3 or 4 numbers"
                             % (name, r))
        values = [float(v) for v in row]
        if not all(math.isfinite(v) for v in values):
            raise ValueError("%s[%d] holds a value that is not finite"
                             % (name, r))
        out.append(values + [0.0] * (4 - len(values)))
    while len(out) < 4:
        out.append([0.0, 0.0, 0.0, 1.0 if len(out) == 3 else 0.0])
    return out


IDENTITY = [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0],
            [0.0, 0.0, 0.0, 1.0]]


def read_calibration(path):
    """The cameras of a calibration file (docs/calibration.md, both forms):
    a list of dicts with "name", "intrinsics", "camera_to_lidar", "img_aug"
    (4x4 lists of float, top-left 3x3 and last column used) and
    "image_size" ([width, height] or None)."""
    with open(path) as stream:
        document = json.load(stream)
    cameras = []
    if "cameras" in document:
        for i, entry in enumerate(document["cameras"]):
            where = "cameras[%d]" % i
            cameras.append({
                "name": entry.get("name", str(i)),
                "intrinsics": _matrix_rows(entry["intrinsics"],
                                           where + ".intrinsics"),
                "camera_to_lidar": _matrix_rows(
                    entry["camera_to_lidar"], where + ".camera_to_lidar"),
                "img_aug": (_matrix_rows(entry["img_aug"], where + ".img_aug")
                            if "img_aug" in entry else IDENTITY),
                "image_size": entry.get("image_size")})
    elif "camera_intrinsics" in document:
        names = document.get("camera_order", [])
        for i, k in enumerate(document["camera_intrinsics"]):
            cameras.append({
                "name": names[i] if i < len(names) else str(i),
                "intrinsics": _matrix_rows(k, "camera_intrinsics[%d]" % i),
                "camera_to_lidar": _matrix_rows(
                    document["camera2lidar"][i], "camera2lidar[%d]" % i),
                "img_aug": _matrix_rows(document["img_aug_matrix"][i],
                                        "img_aug_matrix[%d]" % i),
                "image_size": None})
    else:
        raise ValueError("%s: neither \"cameras\" nor \"camera_intrinsics\" "
                         "is present" % path)
    return cameras


def _invert_3x3(m4):
    """bevpool's invert_3x3: the inverse of the top-left 3x3 by cofactors,
    each entry one division by the determinant, in the same order."""
    import numpy

    a, b, c = m4[0][0], m4[0][1], m4[0][2]
    d, e, f = m4[1][0], m4[1][1], m4[1][2]
    g, h, i = m4[2][0], m4[2][1], m4[2][2]
    f64 = numpy.float64
    a, b, c, d, e, f, g, h, i = (f64(v) for v in (a, b, c, d, e, f, g, h, i))
    co0, co1, co2 = e * i - f * h, f * g - d * i, d * h - e * g
    det = a * co0 + b * co1 + c * co2
    scale = math.sqrt(a * a + b * b + c * c) \
        * math.sqrt(d * d + e * e + f * f) * math.sqrt(g * g + h * h + i * i)
    if not math.isfinite(det) or not abs(det) > 1e-12 * scale:
        raise ValueError("a 3x3 matrix cannot be inverted")
    return [co0 / det, (c * h - b * i) / det, (b * f - c * e) / det,
            co1 / det, (a * i - c * g) / det, (c * d - a * f) / det,
            co2 / det, (b * g - a * h) / det, (a * e - b * d) / det]


def axis_cells(bound):
    """bevpool's cell count of an axis: round((max - min) / step)."""
    return int(math.floor((bound[1] - bound[0]) / bound[2] + 0.5))


def depth_bins(dbound):
    """bevpool's depth bins: ceil((max - min) / step)."""
    return int(math.ceil((dbound[1] - dbound[0]) / dbound[2]))


class BevGrid:
    """bevpool's properties: the BEV bounds, the depth bins, the network's
    input image size and the feature map size (both width, height)."""

    def __init__(self, xbound, ybound, zbound, dbound, image_size,
                 feature_size, rounding="truncate"):
        if rounding not in ("truncate", "floor"):
            raise ValueError("rounding is truncate or floor")
        self.bounds = [[float(v) for v in b] for b in (xbound, ybound,
                                                       zbound)]
        self.dbound = [float(v) for v in dbound]
        self.image_size = tuple(int(v) for v in image_size)
        self.feature_size = tuple(int(v) for v in feature_size)
        self.rounding = rounding
        self.n = [axis_cells(b) for b in self.bounds]
        self.depth_bins = depth_bins(self.dbound)
        if min(self.n) < 1 or self.depth_bins < 1:
            raise ValueError("the grid has no cell")

    @property
    def cells(self):
        return self.n[0] * self.n[1] * self.n[2]


def _frustum_coord(index, count, size):
    """linspace(0, size - 1, count)[index] as bevpool computes it."""
    import numpy

    if count < 2:
        return numpy.zeros_like(index, dtype=numpy.float64)
    return index.astype(numpy.float64) * numpy.float64(size - 1) \
        / numpy.float64(count - 1)


class Geometry:
    """The cell of every frustum point of every camera: cell[n][d][v][u],
    an index into the [nz][ny][nx] plane (bevpool's layout=yx), or -1 when
    the point falls outside the grid."""

    def __init__(self, cameras, grid):
        import numpy

        self.grid = grid
        fw, fh = grid.feature_size
        iw, ih = grid.image_size
        depth = grid.depth_bins
        f64 = numpy.float64
        us = numpy.arange(fw).reshape(1, 1, fw)
        vs = numpy.arange(fh).reshape(1, fh, 1)
        ds = numpy.arange(depth).reshape(depth, 1, 1)
        xs = _frustum_coord(us, fw, iw)
        ys = _frustum_coord(vs, fh, ih)
        depths = f64(grid.dbound[0]) + ds.astype(f64) * f64(grid.dbound[2])
        cells = []
        for camera in cameras:
            a = _invert_3x3(camera["img_aug"])
            k_inv = _invert_3x3(camera["intrinsics"])
            c2l = camera["camera_to_lidar"]
            # camera_to_lidar's 3x3 times inverse(K), each entry summed
            # left to right as bevpool does
            m = []
            for row in range(3):
                r = [f64(v) for v in c2l[row][:3]]
                for col in range(3):
                    m.append(r[0] * k_inv[col] + r[1] * k_inv[3 + col]
                             + r[2] * k_inv[6 + col])
            aug_t = [f64(camera["img_aug"][row][3]) for row in range(3)]
            lidar_t = [f64(c2l[row][3]) for row in range(3)]
            qx = xs - aug_t[0]
            qy = ys - aug_t[1]
            # the x and y terms of each row first, then the depth term
            xy = [a[3 * i] * qx + a[3 * i + 1] * qy for i in range(3)]
            qz = depths - aug_t[2]
            rx = xy[0] + a[2] * qz
            ry = xy[1] + a[5] * qz
            rz = xy[2] + a[8] * qz
            sx = rx * rz
            sy = ry * rz
            point = [m[3 * i] * sx + m[3 * i + 1] * sy + m[3 * i + 2] * rz
                     + lidar_t[i] for i in range(3)]
            inside = numpy.ones((depth, fh, fw), dtype=bool)
            index = []
            for axis in range(3):
                lower, _, step = grid.bounds[axis]
                t = (point[axis] - f64(lower)) / f64(step)
                t = numpy.broadcast_to(t, (depth, fh, fw))
                if grid.rounding == "floor":
                    ok = t >= 0.0
                else:
                    ok = t > -1.0
                ok &= t < f64(grid.n[axis])
                inside &= ok
                # truncation toward zero, of the values kept only
                index.append(numpy.trunc(numpy.where(ok, t, 0.0))
                             .astype(numpy.int64))
            cell = (index[2] * grid.n[1] + index[1]) * grid.n[0] + index[0]
            cells.append(numpy.where(inside, cell, -1))
        self.cell = numpy.stack(cells)

    def counts(self):
        """Frustum points per cell, [nz][ny][nx] (what bevpool gives for
        features of 1 and depth probabilities of 1)."""
        import numpy

        kept = self.cell[self.cell >= 0]
        return numpy.bincount(kept, minlength=self.grid.cells).reshape(
            self.grid.n[2], self.grid.n[1], self.grid.n[0])


def pool_indices(geometry):
    """The kept frustum points of @geometry as three index arrays: the
    point (n, d, v, u) flattened, the pixel (n, v, u) it reads, its cell."""
    import numpy

    flat = geometry.cell.reshape(-1)
    kept = numpy.nonzero(flat >= 0)[0]
    depth, fh, fw = geometry.cell.shape[1:]
    camera = kept // (depth * fh * fw)
    pixel = kept % (fh * fw) + camera * (fh * fw)
    return kept, pixel, flat[kept]


def _pool_module():
    import torch

    class Pool(torch.nn.Module):
        """The sum over the frustum points of each cell of feature x depth
        probability (differentiable in both inputs); its index tensors are
        buffers outside the state_dict, so they follow the module to its
        device."""

        def __init__(self, geometry):
            super().__init__()
            self.grid = geometry.grid
            points, pixels, cells = pool_indices(geometry)
            for name, value in (("points", points), ("pixels", pixels),
                                ("cells", cells)):
                self.register_buffer(name, torch.as_tensor(
                    value, dtype=torch.int64), persistent=False)

        def forward(self, depth, features):
            """depth [B][N][D][H][W], features [B][N][H][W][C] (any float
            type; summed in float32) -> [B][C x nz][ny][nx] float32,
            channel z x C + c holding channel c of z slice z (bevpool's
            stacking)."""
            batch = depth.shape[0]
            channels = features.shape[-1]
            depth = depth.reshape(batch, -1).float()
            features = features.reshape(batch, -1, channels).float()
            volume = depth[:, self.points].unsqueeze(2) \
                * features[:, self.pixels]
            out = torch.zeros((batch, self.grid.cells, channels),
                              dtype=torch.float32, device=depth.device)
            out.index_add_(1, self.cells, volume)
            nx, ny, nz = self.grid.n
            out = out.view(batch, nz, ny, nx, channels)
            return out.permute(0, 1, 4, 2, 3).reshape(batch, nz * channels,
                                                      ny, nx)

    return Pool


def Pool(geometry):
    """A torch.nn.Module pooling with @geometry (torch imported here, so
    that the geometry alone needs numpy only)."""
    return _pool_module()(geometry)
