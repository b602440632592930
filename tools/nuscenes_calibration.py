#!/usr/bin/env python3
"""Writes the calibration file of bevpool (docs/calibration.md, form 1) for
one sample of an mmdetection3d nuScenes info file, its cameras in the order
of a camera model (the model's data config, or BEVDet's by default).

    tools/nuscenes_calibration.py INFO OUT.json [--sample N]
        [--weights MODEL.safetensors | --cameras CAM_A,CAM_B,...]
        [--image-size 1600x900] [--resize 0.48 --crop 32,176]

INFO is an info file of mmdetection3d 1.x (a .pkl, or that .pkl converted
to JSON, as the demo sample's n015-2018-07-24-11-22-45+0800_info.json is),
whose data_list[N].images[CAMERA] hold cam2img (K) and lidar2cam, or of
mmdetection3d 0.x / BEVDet (infos[N].cams[CAMERA] with cam_intrinsic,
sensor2lidar_rotation and sensor2lidar_translation). camera_to_lidar is the
inverse of lidar2cam (a rigid transform: R^T, -R^T t), or [R | t] of the
sensor2lidar pair.

The camera order is the model's: with --weights, data_config.cams of the
file's p3d.model metadata; else --cameras; else BEVDet's (CAM_FRONT_LEFT,
CAM_FRONT, CAM_FRONT_RIGHT, CAM_BACK_LEFT, CAM_BACK, CAM_BACK_RIGHT). Link
camera k of the file to camencode's sink_k.

img_aug: camencode's caps carry each camera's resize and crop, and bevpool
uses them instead of the file's img_aug; the file still gets BEVDet's
test-time transform for a 1600 x 900 image (resize 0.48, crop at (32, 176),
or --resize and --crop), so that features replayed from a file without
those caps fields pool the same. image_size is each camera's image
(--image-size, 1600 x 900 for nuScenes).

Plain Python 3: no numpy, no torch; a .pkl needs mmengine or plain pickle.
"""
import argparse
import json
import pickle
import struct
import sys

BEVDET_CAMERAS = ["CAM_FRONT_LEFT", "CAM_FRONT", "CAM_FRONT_RIGHT",
                  "CAM_BACK_LEFT", "CAM_BACK", "CAM_BACK_RIGHT"]


def load_info(path):
    if path.endswith(".json"):
        with open(path) as f:
            return json.load(f)
    with open(path, "rb") as f:
        try:
            return pickle.load(f)
        except (ModuleNotFoundError, AttributeError):
            import mmengine  # an info written by mmdetection3d's tools
            return mmengine.load(path)


def model_cameras(path):
    """data_config.cams of a safetensors file's p3d.model metadata."""
    with open(path, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(length))
    metadata = header.get("__metadata__", {})
    if "p3d.model" not in metadata:
        sys.exit(f"{path}: no p3d.model metadata (not a weights file of ours)")
    config = json.loads(metadata["p3d.model"])
    cams = config.get("data_config", {}).get("cams")
    if not cams:
        sys.exit(f"{path}: its p3d.model has no data_config.cams (not a "
                 "camera model)")
    return cams


def rigid_inverse(m):
    """The inverse of a 4x4 rigid transform [[R, t], [0, 1]]."""
    r = [[m[j][i] for j in range(3)] for i in range(3)]
    t = [-sum(r[i][j] * m[j][3] for j in range(3)) for i in range(3)]
    return [r[0] + [t[0]], r[1] + [t[1]], r[2] + [t[2]], [0.0, 0.0, 0.0, 1.0]]


def camera_entries(info, sample, names):
    if "data_list" in info:
        images = info["data_list"][sample]["images"]
        for name in names:
            if name not in images:
                sys.exit(f"sample {sample} has no camera {name} (it has "
                         f"{', '.join(sorted(images))})")
            cam = images[name]
            yield name, cam["cam2img"], rigid_inverse(cam["lidar2cam"])
    else:
        cams = info["infos"][sample]["cams"]
        for name in names:
            cam = cams[name]
            rot = cam["sensor2lidar_rotation"]
            tr = cam["sensor2lidar_translation"]
            yield name, cam["cam_intrinsic"], [
                list(rot[0]) + [tr[0]], list(rot[1]) + [tr[1]],
                list(rot[2]) + [tr[2]], [0.0, 0.0, 0.0, 1.0]]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("info")
    p.add_argument("out")
    p.add_argument("--sample", type=int, default=0)
    p.add_argument("--weights", help="take the camera order from this "
                   "model's data_config.cams")
    p.add_argument("--cameras", help="comma-separated camera names, in the "
                   "model's order")
    p.add_argument("--image-size", default="1600x900")
    p.add_argument("--resize", type=float, default=0.48)
    p.add_argument("--crop", default="32,176")
    args = p.parse_args()

    if args.weights:
        names = model_cameras(args.weights)
    elif args.cameras:
        names = args.cameras.split(",")
    else:
        names = BEVDET_CAMERAS
    width, height = (int(v) for v in args.image_size.split("x"))
    crop_x, crop_y = (float(v) for v in args.crop.split(","))
    r = args.resize
    img_aug = [[r, 0.0, 0.0, -crop_x], [0.0, r, 0.0, -crop_y],
               [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]]
    cameras = []
    for name, k, camera_to_lidar in camera_entries(load_info(args.info),
                                                   args.sample, names):
        cameras.append({"name": name,
                        "intrinsics": [[float(v) for v in row] for row in k],
                        "camera_to_lidar": [[float(v) for v in row]
                                            for row in camera_to_lidar],
                        "img_aug": img_aug,
                        "image_size": [width, height]})
    with open(args.out, "w") as f:
        json.dump({"cameras": cameras}, f, indent=1)
        f.write("\n")
    print(f"{args.out}: {len(cameras)} cameras ({', '.join(names)})")


if __name__ == "__main__":
    main()
