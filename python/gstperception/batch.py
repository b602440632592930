"""p3d-batch: a gst-perception pipeline over a dataset on a Dask cluster.

    p3d-batch run --pipeline "pointcloudparse ! voxelize ... ! boxenc" \\
        --inputs 'drives/**/*.bin' --output OUTDIR \\
        [--scheduler tcp://HOST:8786] [--workers N] [--shard-size FILES]

Every input file goes through the pipeline text as
`gst-launch-1.0 filesrc location=FILE ! TEXT ! filesink location=OUT` would
take it, and OUT is OUTDIR/<the file's path below the pattern's folders>
with the suffix .jsonl. Shards of files are Dask tasks; each worker keeps
one started pipeline per GPU (gstperception.filepipeline) and reuses it for
every file it is given. Without --scheduler a LocalCluster is started on
this machine with one worker per GPU, or one per core without a GPU.

An output is written to a temporary name and renamed once complete, after
its record (.p3d-batch/<output>.json: frames, boxes, seconds, the pipeline
and the input's size and time) is in place, so a killed run leaves only
complete outputs behind, and running the same command again skips them. A
file that fails is retried (Dask's retries), then recorded as failed with
the element's error message while the rest of the run goes on. At the end,
OUTDIR/manifest.jsonl holds one line per input (status, frames, boxes,
seconds, error) and a summary is printed. docs/cluster.md has the rest.
"""

import argparse
import asyncio
import fcntl
import glob
import json
import logging
import math
import os
import socket
import subprocess
import sys
import threading
import time
import uuid

MANIFEST = "manifest.jsonl"
STATE_DIR = ".p3d-batch"
PART_SUFFIX = ".p3d-part"
DEFAULT_SUFFIX = ".jsonl"
DEFAULT_RETRIES = 2
# The worker's CUDA device; LocalCluster sets it per worker, and a worker
# started by hand takes it from its environment (docs/cluster.md).
DEVICE_ENV = "P3D_CUDA_DEVICE"

# Worker processes import Dask and GStreamer and scan the plugins first.
LOCAL_START_TIMEOUT = 300

EXIT_OK = 0
EXIT_FAILED_FILES = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class UsageError(Exception):
    """Arguments or a setup that cannot run: said to the user, exit 2."""


class ShardFailed(Exception):
    """Some files of a shard failed; Dask retries the shard, and the files
    already complete are skipped on the next attempt. After the last one the
    client gets this exception with every file's record."""

    def __init__(self, message, results):
        super().__init__(message, results)
        self.message = message
        self.results = results

    def __str__(self):
        return self.message


# -- inputs, outputs and what is complete (no Dask, no GStreamer) ---------


def pattern_root(pattern):
    """The folder part of a glob pattern before its first wildcard: inputs
    keep their path below it in the output folder."""
    parts = pattern.split(os.sep)
    fixed = []
    for part in parts[:-1]:
        if glob.has_magic(part):
            break
        fixed.append(part)
    if len(fixed) == len(parts) - 1 and not glob.has_magic(parts[-1]) and \
            os.path.isdir(pattern):
        fixed = parts
    root = os.sep.join(fixed)
    if pattern.startswith(os.sep) and not root:
        root = os.sep
    return root or os.curdir


def plan(patterns, outdir, suffix=DEFAULT_SUFFIX):
    """[(input, output)] for every file the patterns match, in order,
    without duplicates: the input as matched, the output relative to
    outdir. A pattern naming a folder takes every file below it. Tuples, not
    dicts: a run of millions of files keeps them all."""
    outdir_abs = os.path.abspath(outdir)
    items = []
    seen_inputs = set()
    outputs = {}
    for pattern in patterns:
        if os.path.isdir(pattern):
            matches = glob.glob(os.path.join(pattern, "**", "*"),
                                recursive=True)
        else:
            matches = glob.glob(pattern, recursive=True)
        root = os.path.abspath(pattern_root(pattern))
        for match in sorted(matches):
            path = os.path.abspath(match)
            if not os.path.isfile(path) or path in seen_inputs:
                continue
            if path == outdir_abs or path.startswith(outdir_abs + os.sep):
                continue  # never our own outputs
            seen_inputs.add(path)
            relative = os.path.relpath(path, root)
            output = os.path.splitext(relative)[0] + suffix
            if output in outputs:
                raise UsageError(
                    "%s and %s would both be written to %s: give patterns "
                    "whose files differ in more than their suffix" %
                    (outputs[output], match, os.path.join(outdir, output)))
            if output == MANIFEST or output.split(os.sep)[0] == STATE_DIR:
                raise UsageError("%s would be written over p3d-batch's own "
                                 "%s" % (match, output))
            outputs[output] = match
            items.append((match, output))
    return items


def expand(item, outdir):
    """A planned (input, output) as the workers take it: `path` the input's
    absolute path, `output_path` and `state` (its record) absolute too."""
    outdir_abs = os.path.abspath(outdir)
    match, output = item
    return {"input": match, "output": output, "path": os.path.abspath(match),
            "output_path": os.path.join(outdir_abs, output),
            "state": os.path.join(outdir_abs, STATE_DIR, output + ".json")}


def input_signature(path):
    status = os.stat(path)
    return {"input_size": status.st_size, "input_mtime_ns": status.st_mtime_ns}


def read_complete(item, pipeline):
    """The record of @item's output when it is complete for this pipeline
    and this input (same text, same size and time), else None."""
    try:
        with open(item["state"], encoding="utf-8") as f:
            record = json.load(f)
        signature = input_signature(item["path"])
    except (OSError, ValueError):
        return None
    if record.get("status") != "done" or record.get("pipeline") != pipeline:
        return None
    if any(record.get(k) != v for k, v in signature.items()):
        return None
    if not os.path.isfile(item["output_path"]):
        return None
    return record


def write_json_atomic(path, value):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    part = "%s.%s%s" % (path, uuid.uuid4().hex[:12], PART_SUFFIX)
    with open(part, "w", encoding="utf-8") as f:
        json.dump(value, f, sort_keys=True)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(part, path)


def remove_parts(outdir):
    """Temporaries left by workers that were killed while writing."""
    removed = 0
    for folder, _, names in os.walk(outdir):
        for name in names:
            if name.endswith(PART_SUFFIX):
                try:
                    os.remove(os.path.join(folder, name))
                    removed += 1
                except OSError:
                    pass
    return removed


# -- on the workers ------------------------------------------------------

_pool_lock = threading.Lock()
_pool = {}  # (pipeline text, device) -> [idle FilePipeline]


def worker_device():
    """This worker's CUDA device from P3D_CUDA_DEVICE, -1 when unset (the
    elements then take the default device, the first of
    CUDA_VISIBLE_DEVICES)."""
    value = os.environ.get(DEVICE_ENV, "").strip()
    if not value:
        return -1
    try:
        return int(value)
    except ValueError:
        raise UsageError("%s=%r is not a device number" %
                         (DEVICE_ENV, value)) from None


def _acquire(text, device):
    from . import filepipeline

    with _pool_lock:
        for key in list(_pool):
            if key[0] != text:
                # a new job: the pipelines of the last one hold a device's
                # memory and a model that nobody asks for any more
                for idle in _pool.pop(key):
                    idle.close()
        idle = _pool.get((text, device))
        if idle:
            return idle.pop()
    return filepipeline.FilePipeline(text, device)


def _release(pipeline):
    if pipeline.broken:
        return
    with _pool_lock:
        _pool.setdefault((pipeline.description, pipeline.device_id),
                         []).append(pipeline)


def _whoami():
    try:
        from distributed import get_worker

        worker = get_worker()
        address, name = worker.address, worker.name
    except (ImportError, ValueError):
        address, name = None, None
    return {"worker": address, "worker_name": name,
            "host": socket.gethostname(), "pid": os.getpid(),
            "device": worker_device()}


def start_pipeline(job):
    """Builds and starts the job's pipeline on a worker, which keeps it for
    its first shard, so that a pipeline that cannot start is said once,
    before any file is given out. Returns {error: its text or None,
    backends: [(element, cuda or cpu)], seconds: the start-up's}."""
    from . import filepipeline

    try:
        pipeline = _acquire(job["pipeline"], worker_device())
    except (filepipeline.PipelineError, UsageError) as error:
        return {"error": str(error), "backends": [], "seconds": None}
    _release(pipeline)
    return {"error": None, "backends": pipeline.backends,
            "seconds": pipeline.startup_seconds}


def _failed_record(item, message, element=None, debug=None, whoami=None,
                   status="failed"):
    record = {"input": item["input"], "output": item["output"],
              "status": status, "frames": None, "boxes": None,
              "seconds": None, "error": message, "element": element,
              "debug": debug, "warnings": []}
    record.update(whoami or {})
    return record


def _run_file(pipeline, item, job, whoami):
    """One file through @pipeline into its output; returns its record."""
    from . import filepipeline

    signature = input_signature(item["path"]) if os.path.exists(
        item["path"]) else {}
    os.makedirs(os.path.dirname(item["output_path"]), exist_ok=True)
    part = "%s.%s%s" % (item["output_path"], uuid.uuid4().hex[:12],
                        PART_SUFFIX)
    try:
        if job["discard"]:
            result = pipeline.run(item["path"], None, job["timeout"])
        else:
            with open(part, "wb") as out:
                result = pipeline.run(item["path"], out, job["timeout"])
                out.flush()
                os.fsync(out.fileno())
    except filepipeline.FileFailed as failure:
        if os.path.exists(part):
            os.remove(part)
        return _failed_record(item, failure.message, failure.element,
                              failure.debug, whoami)
    except OSError as error:
        if os.path.exists(part):
            os.remove(part)
        return _failed_record(item, "cannot write %s: %s" %
                              (item["output_path"], error), whoami=whoami)
    record = {"input": item["input"], "output": item["output"],
              "status": "done", "frames": result.frames,
              "boxes": result.boxes, "seconds": round(result.seconds, 6),
              "error": None, "warnings": result.warnings,
              "pipeline": job["pipeline"]}
    record.update(signature)
    record.update(whoami)
    if job["discard"]:
        return record
    # an older output goes first, so that a record never vouches for it
    if os.path.exists(item["output_path"]):
        os.remove(item["output_path"])
    write_json_atomic(item["state"], record)
    os.replace(part, item["output_path"])
    return record


def process_shard(job, items):
    """The Dask task: every file of a shard through this worker's pipeline.
    Files already complete (an earlier attempt of this shard, or an earlier
    run) are skipped. Raises ShardFailed when a file failed, so that Dask
    retries the shard."""
    from . import filepipeline

    whoami = _whoami()
    results = []
    pipeline = None
    try:
        for item in items:
            record = None if job["force"] or job["discard"] else \
                read_complete(item, job["pipeline"])
            if record is not None:
                results.append(record)
                continue
            if pipeline is None:
                try:
                    pipeline = _acquire(job["pipeline"], whoami["device"])
                except (filepipeline.PipelineError, UsageError) as error:
                    results.append(_failed_record(item, str(error),
                                                  whoami=whoami))
                    continue
            record = _run_file(pipeline, item, job, whoami)
            if pipeline.broken:
                pipeline = None
            results.append(record)
    finally:
        if pipeline is not None:
            _release(pipeline)
    # the client needs no copy of the pipeline text per file
    results = [{k: v for k, v in r.items() if k != "pipeline"}
               for r in results]
    failed = [r for r in results if r["status"] != "done"]
    if failed:
        raise ShardFailed("%d of %d files failed, first %s: %s" %
                          (len(failed), len(results), failed[0]["input"],
                           failed[0]["error"]), results)
    return results


# -- the cluster ---------------------------------------------------------


def count_gpus():
    """NVIDIA GPUs this process may use: CUDA_VISIBLE_DEVICES when set, else
    the driver's list (no CUDA library is loaded for it)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        count = 0
        for entry in visible.split(","):
            entry = entry.strip()
            if not entry or entry.startswith("-"):
                break  # CUDA stops at the first invalid entry
            count += 1
        return count
    try:
        return len(os.listdir("/proc/driver/nvidia/gpus"))
    except OSError:
        pass
    try:
        listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True,
                                 text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return 0
    if listing.returncode != 0:
        return 0
    return sum(1 for line in listing.stdout.splitlines()
               if line.startswith("GPU "))


def start_local_cluster(workers, gpus, verbose=False):
    """A LocalCluster of worker processes with one thread each: one worker
    per GPU (resource GPU=1, its device in P3D_CUDA_DEVICE, round robin when
    there are more workers than GPUs), or one per core without a GPU."""
    from distributed import LocalCluster

    class PerDeviceCluster(LocalCluster):
        def new_worker_spec(self):
            spec = super().new_worker_spec()
            if not gpus:
                return spec
            name, worker = next(iter(spec.items()))
            options = dict(worker["options"], resources={"GPU": 1},
                           env={DEVICE_ENV: str(int(name) % gpus)})
            return {name: dict(worker, options=options)}

    cluster = PerDeviceCluster(
        n_workers=0, threads_per_worker=1, processes=True,
        silence_logs=logging.WARNING if verbose else logging.ERROR)
    cluster.scale(workers)
    return cluster


def _shard_size(files, workers):
    """Several shards per worker, so that the last ones balance the load,
    and at most 64 files a shard, so that a lost worker costs little."""
    return max(1, min(64, math.ceil(files / (4 * max(1, workers)))))


# -- the run -------------------------------------------------------------

MANIFEST_KEYS = ("status", "frames", "boxes", "seconds", "error", "element",
                 "debug", "warnings", "worker", "worker_name", "host", "pid",
                 "device")
# Failures the summary lists; the manifest has all of them.
SUMMARY_FAILURES = 20


class Summary:
    """What the end of a run says, summed as the manifest is written (the
    records themselves are not kept: a run may have millions)."""

    def __init__(self):
        self.files = 0
        self.skipped = 0
        self.ran = 0
        self.frames = 0
        self.boxes = 0  # None once an output is not boxenc's
        self.failed = []
        self.failed_count = 0
        self.by_worker = {}

    def add(self, entry):
        self.files += 1
        if entry["status"] != "done":
            self.failed_count += 1
            if len(self.failed) < SUMMARY_FAILURES:
                self.failed.append(entry)
            return
        if entry["skipped"]:
            self.skipped += 1
            return
        self.ran += 1
        self.frames += entry["frames"] or 0
        self.boxes = None if self.boxes is None or entry["boxes"] is None \
            else self.boxes + entry["boxes"]
        key = (str(entry.get("worker") or "?"), entry.get("device"))
        files, frames, busy = self.by_worker.get(key, (0, 0, 0.0))
        self.by_worker[key] = (files + 1, frames + (entry["frames"] or 0),
                               busy + (entry["seconds"] or 0.0))

    def write(self, wall_seconds, out):
        done = self.files - self.failed_count
        print("files: %d, %d done (%d already complete), %d failed" %
              (self.files, done, self.skipped, self.failed_count), file=out)
        rate = 1.0 / wall_seconds if wall_seconds > 0 else 0.0
        print("this run: %d files, %d frames, %s boxes in %.2f s: %.2f "
              "files/s, %.2f frames/s in all" %
              (self.ran, self.frames,
               "-" if self.boxes is None else self.boxes, wall_seconds,
               self.ran * rate, self.frames * rate), file=out)
        if self.by_worker:
            print("%-34s %6s %6s %8s %8s %10s" %
                  ("worker", "device", "files", "frames", "busy s",
                   "frames/s"), file=out)
            for (worker, device), (files, frames, busy) in \
                    sorted(self.by_worker.items(), key=str):
                print("%-34s %6s %6d %8d %8.2f %10.2f" %
                      (worker, "-" if device is None or device < 0 else device,
                       files, frames, busy, frames / busy if busy else 0.0),
                      file=out)
        for entry in self.failed:
            print("failed: %s: %s" % (entry["input"], entry["error"]),
                  file=out)
        if self.failed_count > len(self.failed):
            print("... and %d more failures in the manifest" %
                  (self.failed_count - len(self.failed)), file=out)


def _manifest_entry(item, record, skipped):
    entry = {"input": item["input"], "output": item["output"]}
    for key in MANIFEST_KEYS:
        entry[key] = record.get(key)
    entry["skipped"] = skipped
    return entry


def _shard_records(future, shard, job, outdir):
    """{input: record} of one shard's task, finished or not."""
    if future is None or future.status == "cancelled":
        # not run, or interrupted: only what is on disk counts
        error = None
    elif future.status == "finished":
        return {r["input"]: r for r in future.result()}
    else:
        error = future.exception()
        if isinstance(error, ShardFailed):
            return {r["input"]: r for r in error.results}
    # the shard never returned (its workers died: KilledWorker), or never
    # ran: what its attempts completed is on disk
    records = {}
    for planned in shard:
        item = expand(planned, outdir)
        record = None if job["discard"] else \
            read_complete(item, job["pipeline"])
        if record is None and error is not None:
            record = _failed_record(item, "%s: %s" %
                                    (type(error).__name__, error))
        if record is not None:
            records[item["input"]] = record
    return records


def _write_manifest(outdir, items, complete, shards, futures, job, summary):
    """OUTDIR/manifest.jsonl, one line per input, in input order: the
    complete ones of earlier runs from their records, the others from their
    shard's results, fetched one shard at a time."""
    path = os.path.join(outdir, MANIFEST)
    part = path + PART_SUFFIX
    shard_index, offset, records = 0, 0, {}
    with open(part, "w", encoding="utf-8") as f:
        for planned in items:
            item = expand(planned, outdir)
            if item["input"] in complete:
                record = read_complete(item, job["pipeline"]) or \
                    _failed_record(item, "its output changed during the run")
                entry = _manifest_entry(item, record, record["status"] ==
                                        "done")
            else:
                if offset == 0:
                    records = _shard_records(
                        futures[shard_index] if shard_index < len(futures)
                        else None, shards[shard_index], job, outdir)
                record = records.get(item["input"]) or _failed_record(
                    item, "the run was interrupted before this file was "
                    "done", status="interrupted")
                entry = _manifest_entry(item, record, False)
                offset += 1
                if offset == len(shards[shard_index]):
                    shard_index, offset = shard_index + 1, 0
            summary.add(entry)
            f.write(json.dumps(entry, sort_keys=True) + "\n")
    os.replace(part, path)
    return path


def run(pipeline, inputs, output, scheduler=None, workers=None,
        shard_size=None, retries=DEFAULT_RETRIES, timeout=None,
        suffix=DEFAULT_SUFFIX, force=False, discard=False, progress=None,
        verbose=False, out=None):
    """Runs @pipeline over the files @inputs (glob patterns) into the folder
    @output; returns the exit status (0: every file complete, 1: some
    failed, 130: interrupted; UsageError for what cannot start)."""
    out = out or sys.stdout
    if scheduler and workers:
        raise UsageError("--workers sizes the local cluster; a scheduler's "
                         "workers are those started with `dask worker`")
    if progress is None:
        progress = out.isatty()
    if not verbose:
        logging.getLogger("distributed").setLevel(logging.ERROR)
    items = plan(inputs, output, suffix)
    if not items:
        raise UsageError("no file matches %s" % " ".join(inputs))
    os.makedirs(os.path.join(output, STATE_DIR), exist_ok=True)
    with open(os.path.join(output, STATE_DIR, "lock"), "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise UsageError("another p3d-batch run is writing to %s" %
                             output) from None
        return _run_locked(pipeline, items, output, scheduler, workers,
                           shard_size, retries, timeout, force, discard,
                           progress, verbose, out)


def _run_locked(pipeline, items, output, scheduler, workers, shard_size,
                retries, timeout, force, discard, progress, verbose, out):
    remove_parts(output)
    job = {"pipeline": pipeline, "timeout": timeout, "force": force,
           "discard": discard}
    complete = set()
    todo = []
    for planned in items:
        if not force and not discard and \
                read_complete(expand(planned, output), pipeline):
            complete.add(planned[0])
        else:
            todo.append(planned)

    summary = Summary()
    wall, interrupted = 0.0, False
    if todo:
        client, cluster = _connect(scheduler, workers, verbose, out)
        try:
            shards, futures, wall, interrupted = _run_shards(
                client, job, todo, output, shard_size, retries, progress,
                out)
            manifest = _write_manifest(output, items, complete, shards,
                                       futures, job, summary)
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
    else:
        manifest = _write_manifest(output, items, complete, [], [], job,
                                   summary)
    if not discard:
        remove_parts(output)
    summary.write(wall, out)
    print("manifest: %s" % manifest, file=out)
    if interrupted:
        print("interrupted: the same command resumes the run", file=out)
        return EXIT_INTERRUPTED
    return EXIT_FAILED_FILES if summary.failed_count else EXIT_OK


def _connect(scheduler, workers, verbose, out):
    """(client, cluster): a client of @scheduler, or of a LocalCluster
    started here (cluster None for a scheduler)."""
    from distributed import Client

    if scheduler:
        client = Client(scheduler)
        if not client.scheduler_info()["workers"]:
            print("waiting for a worker to join %s" % scheduler, file=out)
        client.wait_for_workers(1)
        return client, None
    started = time.monotonic()
    gpus = count_gpus()
    count = workers or gpus or len(os.sched_getaffinity(0))
    cluster = start_local_cluster(count, gpus, verbose)
    try:
        client = Client(cluster)
        try:
            client.wait_for_workers(count, timeout=LOCAL_START_TIMEOUT)
        except (TimeoutError, asyncio.TimeoutError):
            raise UsageError("the local cluster's %d workers did not start "
                             "within %d s" % (count, LOCAL_START_TIMEOUT)) \
                from None
    except BaseException:
        cluster.close()
        raise
    print("local cluster: %d workers%s, started in %.1f s" %
          (count, " on %d GPUs" % gpus if gpus else
           ", no GPU (the elements' CPU path)", time.monotonic() - started),
          file=out)
    return client, cluster


def _run_shards(client, job, todo, outdir, shard_size, retries, progress,
                out):
    """Starts every worker's pipeline, gives out the shards and waits for
    them: (shards, futures, seconds from the first shard to the last,
    interrupted)."""
    from distributed import wait
    from distributed.diagnostics.progressbar import progress as progress_bar

    started = time.monotonic()
    if "dashboard" in client.scheduler_info().get("services", {}):
        print("dashboard: %s%s" % (
            client.dashboard_link, "" if _have_bokeh() else
            " (its pages need bokeh where the scheduler runs)"), file=out)
    info = client.scheduler_info()["workers"]
    resources = {"GPU": 1} if any(
        w.get("resources", {}).get("GPU") for w in info.values()) else None
    # Every worker starts its pipeline now, all at once: a pipeline that
    # cannot start is said before any file is given out, and the start-up
    # is not in the files' time.
    token = uuid.uuid4().hex[:8]
    starts = [client.submit(start_pipeline, job, workers=[address],
                            allow_other_workers=False, resources=resources,
                            key="p3d-start-%s-%05d" % (token, i))
              for i, address in enumerate(info)]
    backends = {}
    for address, started_one in zip(info, client.gather(starts)):
        if started_one["error"] is not None:
            raise UsageError("on %s: %s" % (address, started_one["error"]))
        text = " ".join("%s=%s" % pair for pair in started_one["backends"])
        backends.setdefault(text or "no GPU filter", []).append(address)
    print("pipelines started on %d workers in %.1f s" %
          (len(info), time.monotonic() - started), file=out)
    for text, addresses in sorted(backends.items()):
        print("backends: %s (%s)" % (text, "every worker" if len(backends)
                                     == 1 else " ".join(addresses)),
              file=out)

    started = time.monotonic()
    size = shard_size or _shard_size(len(todo), len(info))
    shards = [todo[i:i + size] for i in range(0, len(todo), size)]
    futures = [client.submit(process_shard, job,
                             [expand(planned, outdir) for planned in shard],
                             key="p3d-shard-%s-%05d" % (token, i),
                             resources=resources, retries=retries,
                             pure=False)
               for i, shard in enumerate(shards)]
    interrupted = False
    try:
        if progress:
            progress_bar(futures)
            print(file=out)
        wait(futures)
    except KeyboardInterrupt:
        interrupted = True
        client.cancel(futures)
    return shards, futures, time.monotonic() - started, interrupted


def _have_bokeh():
    import importlib.util

    return importlib.util.find_spec("bokeh") is not None


# -- the command ---------------------------------------------------------


def _positive(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("%s is not a positive number" % text)
    return value


def _non_negative(text):
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("%s is negative" % text)
    return value


def parser():
    top = argparse.ArgumentParser(
        prog="p3d-batch",
        description="Runs a gst-perception pipeline over many files on a "
        "Dask cluster, one pipeline per GPU per worker (docs/cluster.md).")
    commands = top.add_subparsers(dest="command", required=True)
    run_command = commands.add_parser(
        "run", help="run a pipeline over files",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="""Runs the pipeline over every input file, each as
`gst-launch-1.0 filesrc location=FILE ! PIPELINE ! filesink` would, into
OUTDIR; complete outputs of an earlier run of the same command are skipped,
so an interrupted run resumes.""",
        epilog="""example:
  p3d-batch run --inputs 'drives/**/*.bin' --output boxes/ --pipeline \\
    'pointcloudparse preset=kitti ! voxelize voxel-size="<0.32,0.32,4.0>"
     range="<-51.2,-15.36,-3,51.2,15.36,1>" max-points=20 max-voxels=30720
     ! pillarfeat features=mmdet3d-11 ! pillarencode weights=m.safetensors
     ! bevdetect weights=m.safetensors ! boxenc'

OUTDIR/manifest.jsonl gets one line per input: status (done, failed),
frames, boxes, seconds, error. Exit status: 0 every file complete, 1 some
failed, 2 the run could not start, 130 interrupted.""")
    run_command.add_argument(
        "--pipeline", required=True, metavar="TEXT",
        help="gst-launch text between the source and the sink, which "
        "p3d-batch supplies per file (filesrc, and an appsink that writes "
        "the output file)")
    run_command.add_argument(
        "--inputs", required=True, action="append", metavar="GLOB",
        help="input files: a glob pattern (** for any folders below; quote "
        "it), or a folder for every file below it; may be repeated")
    run_command.add_argument(
        "--output", required=True, metavar="OUTDIR",
        help="output folder: one file per input, at the input's path below "
        "the pattern's fixed folders, with --suffix")
    run_command.add_argument(
        "--scheduler", metavar="ADDRESS",
        help="a running Dask scheduler, e.g. tcp://HOST:8786 (default: a "
        "LocalCluster on this machine)")
    run_command.add_argument(
        "--workers", type=_positive, metavar="N",
        help="LocalCluster workers (default: one per GPU, or one per core "
        "without a GPU; more workers than GPUs share them round robin)")
    run_command.add_argument(
        "--shard-size", type=_positive, metavar="FILES",
        help="files per task (default: about four tasks per worker, at most "
        "64 files each)")
    run_command.add_argument(
        "--retries", type=_non_negative, default=DEFAULT_RETRIES, metavar="N",
        help="times a shard with a failed file is tried again before the "
        "file is recorded as failed (default %(default)s)")
    run_command.add_argument(
        "--timeout", type=float, metavar="SECONDS",
        help="fail a file whose pipeline has not ended after this long "
        "(default: no limit)")
    run_command.add_argument(
        "--suffix", default=DEFAULT_SUFFIX,
        help="output file suffix, in place of the input's (default "
        "%(default)s; .txt for boxenc format=kitti)")
    run_command.add_argument(
        "--force", action="store_true",
        help="run every file again, complete or not")
    run_command.add_argument(
        "--discard-output", action="store_true",
        help="run every file but write no output (to measure throughput); "
        "the manifest is still written")
    bar = run_command.add_mutually_exclusive_group()
    bar.add_argument("--progress", dest="progress", action="store_true",
                     default=None,
                     help="show Dask's progress bar (default: on a terminal)")
    bar.add_argument("--no-progress", dest="progress", action="store_false",
                     help="no progress bar")
    run_command.add_argument(
        "--verbose", action="store_true",
        help="show Dask's warnings (restarted workers, failed attempts)")
    return top


def main(argv=None):
    args = parser().parse_args(argv)
    try:
        return run(args.pipeline, args.inputs, args.output,
                   scheduler=args.scheduler, workers=args.workers,
                   shard_size=args.shard_size, retries=args.retries,
                   timeout=args.timeout, suffix=args.suffix, force=args.force,
                   discard=args.discard_output, progress=args.progress,
                   verbose=args.verbose)
    except UsageError as error:
        print("p3d-batch: %s" % error, file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("p3d-batch: interrupted; the same command resumes the run",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    except ImportError as error:
        print("p3d-batch: %s: it needs Dask distributed and PyGObject with "
              "GStreamer (Debian: python3-distributed, python3-gi, "
              "gir1.2-gstreamer-1.0, gir1.2-gst-plugins-base-1.0) in this "
              "Python, %s" % (error, sys.executable), file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    # run as the module gstperception.batch, not __main__, so that the
    # functions Dask sends to the workers are found there by that name
    from gstperception import batch as _batch

    sys.exit(_batch.main())
