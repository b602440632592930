#!/usr/bin/python3
"""p3d-batch on a LocalCluster of worker processes on this machine (the
elements' CPU path), on sweeps the test writes with pointcloudtestsrc and
multifilesink, through the lidar chain with a tiny CenterPoint-pillar model.

The oracle is a plain gst-launch-1.0 run of each file (filesrc ! chain !
filesink): every output must equal it byte for byte.

    /usr/bin/python3 tests/batch/test_batch.py [Plan|Outputs|Faults|Resume]

needs the plugin on GST_PLUGIN_PATH, python3-gi and python3-distributed.
"""

import os
import shutil
import signal
import sys
import tempfile
import unittest

# The valgrind and leaks setups (meson test --setup=..., on the cpu suite)
# would wrap this interpreter and its worker processes, not our C code,
# which the other tests check under them: nothing to do there.
if "vgpreload" in os.environ.get("LD_PRELOAD", "") or \
        "leaks" in os.environ.get("GST_TRACERS", ""):
    print("skipped: under valgrind or the leaks tracer")
    sys.exit(77)

import batchtest as bt  # noqa: E402

sys.path.insert(0, bt.PYTHON_DIR)

try:
    import distributed  # noqa: F401
    import gi

    gi.require_version("Gst", "1.0")
    gi.require_version("GstApp", "1.0")
except (ImportError, ValueError) as missing:
    print("skipped: %s lacks python3-gi or python3-distributed (%s)" %
          (sys.executable, missing))
    sys.exit(77)

FILES = 8
# Each file then takes a third of a second or more, so that a test can
# catch a shard in the middle; identity passes the bytes through.
SLOW = " ! identity sleep-time=300000"


class Fixture(unittest.TestCase):
    """Sweeps, the model, and the oracle's output of every sweep."""

    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="p3d-batch-test-")
        cls.model = bt.write_tiny_model(os.path.join(cls.work,
                                                     "tiny.safetensors"))
        cls.pipeline = bt.lidar_pipeline(cls.model)
        cls.inputs = os.path.join(cls.work, "drive")
        cls.files = bt.write_sweeps(os.path.join(cls.inputs, "velodyne"),
                                    FILES)
        cls.expected = {}
        oracle_dir = os.path.join(cls.work, "oracle")
        os.makedirs(oracle_dir)
        for path in cls.files:
            name = os.path.splitext(os.path.basename(path))[0] + ".jsonl"
            cls.expected[os.path.join("velodyne", name)] = bt.oracle(
                cls.pipeline, path, os.path.join(oracle_dir, name))
        # the chain must find boxes, or equal outputs would prove little
        assert all(data.count(b"\n") > 1 for data in cls.expected.values())

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def outdir(self, name):
        return os.path.join(self.work, name)

    def pattern(self):
        return os.path.join(self.inputs, "**", "*.bin")

    def assertOutputsExpected(self, outdir, expected=None):
        expected = expected or self.expected
        for output, data in expected.items():
            with open(os.path.join(outdir, output), "rb") as f:
                self.assertEqual(f.read(), data, "%s differs from the "
                                 "gst-launch run of its input" % output)
        leftovers = [name for _, _, names in os.walk(outdir)
                     for name in names if name.endswith(".p3d-part")]
        self.assertEqual(leftovers, [], "temporaries left behind")

    def assertBackends(self, text):
        """Every GPU filter of the chain on the path this machine has: the
        CUDA path with a GPU (PERCEPTION_REQUIRE_GPU=1 says there is one),
        else the reference path."""
        from gstperception import batch

        path = "cuda" if os.environ.get("PERCEPTION_REQUIRE_GPU") == "1" \
            or batch.count_gpus() else "cpu"
        self.assertIn("backends: voxelize=%s pillarfeat=%s pillarencode=%s "
                      "bevdetect=%s (every worker)" % ((path,) * 4), text)

    def assertManifestComplete(self, outdir, count=FILES):
        manifest = bt.read_manifest(outdir)
        inputs = [entry["input"] for entry in manifest]
        self.assertEqual(len(inputs), count)
        self.assertEqual(len(set(inputs)), count, "an input twice")
        for entry in manifest:
            self.assertEqual(entry["status"], "done", entry)
            self.assertEqual(entry["frames"], 1, entry)
            data = self.expected.get(entry["output"])
            if data is not None:
                # the frame line's count, and one line per box
                self.assertEqual(entry["boxes"], data.count(b"\n") - 1)
        return manifest


class Plan(unittest.TestCase):
    """Where each input's output goes, without a cluster."""

    def test_outputs_mirror_the_inputs(self):
        from gstperception import batch

        with tempfile.TemporaryDirectory() as work:
            for name in ("d/a/1.bin", "d/a/2.bin", "d/b/1.bin", "d/b/1.txt",
                         "d/out/9.bin"):
                os.makedirs(os.path.join(work, os.path.dirname(name)),
                            exist_ok=True)
                open(os.path.join(work, name), "w").close()
            d = os.path.join(work, "d")
            self.assertEqual(
                batch.pattern_root(os.path.join(d, "**", "*.bin")), d)
            self.assertEqual(batch.pattern_root(os.path.join(d, "a", "1.bin")),
                             os.path.join(d, "a"))
            self.assertEqual(batch.pattern_root(d), d)
            # the output folder inside the inputs is left out
            planned = batch.plan([os.path.join(d, "**", "*.bin")],
                                 os.path.join(d, "out"))
            self.assertEqual([output for _, output in planned],
                             ["a/1.jsonl", "a/2.jsonl", "b/1.jsonl"])
            self.assertEqual(planned[0][0], os.path.join(d, "a", "1.bin"))
            # a folder takes every file below it; a second pattern matching
            # the same files adds nothing
            planned = batch.plan([os.path.join(d, "a"),
                                  os.path.join(d, "a", "*.bin")],
                                 os.path.join(work, "o"), ".txt")
            self.assertEqual([output for _, output in planned],
                             ["1.txt", "2.txt"])
            # two inputs for one output are refused before anything runs
            with self.assertRaisesRegex(batch.UsageError,
                                        "would both be written to"):
                batch.plan([os.path.join(d, "b", "*")],
                           os.path.join(work, "o"))


class Outputs(Fixture):
    """Outputs equal the oracle's, with one worker and with two."""

    def test_one_and_two_workers(self):
        manifests = []
        for workers in (1, 2):
            outdir = self.outdir("out-%d" % workers)
            status, text = bt.run_batch(
                "--pipeline", self.pipeline, "--inputs", self.pattern(),
                "--output", outdir, "--workers", str(workers),
                "--shard-size", "3")
            self.assertEqual(status, 0, text)
            self.assertIn("files: 8, 8 done (0 already complete), 0 failed",
                          text)
            self.assertBackends(text)
            self.assertOutputsExpected(outdir)
            manifest = self.assertManifestComplete(outdir)
            self.assertEqual(len({e["pid"] for e in manifest}), workers,
                             "the files were not spread over the workers")
            manifests.append([(e["input"], e["output"], e["frames"],
                               e["boxes"]) for e in manifest])
        self.assertEqual(manifests[0], manifests[1])

        # the same command again finds everything complete
        status, text = bt.run_batch(
            "--pipeline", self.pipeline, "--inputs", self.pattern(),
            "--output", self.outdir("out-1"), "--workers", "1")
        self.assertEqual(status, 0, text)
        self.assertIn("files: 8, 8 done (8 already complete), 0 failed", text)
        self.assertTrue(all(e["skipped"] for e in
                            bt.read_manifest(self.outdir("out-1"))))
        self.assertOutputsExpected(self.outdir("out-1"))

    def test_pipeline_that_cannot_start(self):
        status, text = bt.run_batch(
            "--pipeline", self.pipeline.replace(self.model, "/nonexistent"),
            "--inputs", self.pattern(), "--output", self.outdir("nostart"),
            "--workers", "1")
        self.assertEqual(status, 2, text)
        self.assertIn("the pipeline cannot start: pillarencode", text)
        self.assertIn("/nonexistent", text)


class Faults(Fixture):
    """A worker killed mid-shard, and a corrupt input."""

    def test_worker_killed_mid_shard(self):
        outdir = self.outdir("killed")
        log = open(os.path.join(self.work, "killed.log"), "w+")
        process = bt.start_batch(
            "--pipeline", self.pipeline + SLOW, "--inputs", self.pattern(),
            "--output", outdir, "--workers", "2", "--shard-size", "4",
            "--verbose", log=log)
        try:
            # the first file of a shard is complete, the shard goes on
            first = bt.wait_for(lambda: bt.read_records(outdir), 240,
                                "a first complete output")
            victim = next(iter(first.values()))["pid"]
            os.kill(victim, signal.SIGKILL)
            status = process.wait(timeout=240)
        finally:
            if process.poll() is None:
                bt.kill_session(process)
        log.seek(0)
        text = log.read()
        log.close()
        self.assertEqual(status, 0, text)
        self.assertOutputsExpected(outdir)
        manifest = self.assertManifestComplete(outdir)
        by_victim = [e["input"] for e in manifest if e["pid"] == victim]
        shard_of = {e["input"]: i // 4 for i, e in enumerate(manifest)}
        shard = [e for e in manifest
                 if shard_of[e["input"]] == shard_of[by_victim[0]]]
        # the killed worker finished part of its shard, not all of it; the
        # rest was done once, elsewhere
        self.assertGreaterEqual(len(by_victim), 1)
        self.assertLess(len(by_victim), 4, "the shard ended before the kill")
        self.assertTrue(all(e["pid"] != victim for e in shard
                            if e["input"] not in by_victim))

    def test_corrupt_input(self):
        inputs = os.path.join(self.work, "with-corrupt")
        shutil.copytree(self.inputs, inputs)
        corrupt = os.path.join(inputs, "velodyne", "000003.bin")
        with open(corrupt, "r+b") as f:
            f.truncate(16 * 100 + 7)  # cut inside a point record
        outdir = self.outdir("corrupt")
        status, text = bt.run_batch(
            "--pipeline", self.pipeline, "--inputs",
            os.path.join(inputs, "**", "*.bin"), "--output", outdir,
            "--workers", "2", "--shard-size", "2", "--retries", "1")
        self.assertEqual(status, 1, text)
        manifest = bt.read_manifest(outdir)
        self.assertEqual(len(manifest), FILES)
        failed = [e for e in manifest if e["status"] != "done"]
        self.assertEqual([e["input"] for e in failed], [corrupt])
        message = ("pointcloudparse: 1607 bytes are not a whole number of "
                   "16-byte point records")
        self.assertIn(message, failed[0]["error"])
        self.assertEqual(failed[0]["element"], "pointcloudparse")
        self.assertIn("failed: %s: %s" % (corrupt, message), text)
        self.assertFalse(os.path.exists(os.path.join(
            outdir, "velodyne", "000003.jsonl")))
        # the message is the element's own, as a plain pipeline posts it
        self.assertEqual(failed[0]["error"], "pointcloudparse: " +
                         bt.oracle_error(self.pipeline, corrupt))
        expected = {k: v for k, v in self.expected.items()
                    if "000003" not in k}
        self.assertOutputsExpected(outdir, expected)


class Resume(Fixture):
    """A run killed with its workers, then resumed, gives what one
    uninterrupted run gives."""

    def test_interrupted_and_resumed(self):
        outdir = self.outdir("resumed")
        args = ["--pipeline", self.pipeline + SLOW, "--inputs",
                self.pattern(), "--output", outdir, "--workers", "1",
                "--shard-size", "2"]
        process = bt.start_batch(*args)
        try:
            bt.wait_for(lambda: len(bt.read_records(outdir)) >= 3, 240,
                        "three complete outputs")
        finally:
            bt.kill_session(process)
        complete = set(bt.read_records(outdir))
        self.assertLess(len(complete), FILES, "the run ended before the kill")
        self.assertFalse(os.path.exists(os.path.join(outdir,
                                                     "manifest.jsonl")))

        status, text = bt.run_batch(*args)
        self.assertEqual(status, 0, text)
        self.assertIn("files: 8, 8 done (%d already complete), 0 failed" %
                      len(complete), text)
        self.assertOutputsExpected(outdir)
        manifest = self.assertManifestComplete(outdir)
        self.assertEqual({e["output"] for e in manifest if e["skipped"]},
                         complete)


if __name__ == "__main__":
    os.environ.setdefault("GST_DEBUG", "0")
    unittest.main(verbosity=2)
