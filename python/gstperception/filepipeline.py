"""A gst-launch pipeline run over many files, one after another (PyGObject).

The pipeline is the text a gst-launch-1.0 user writes between the source
and the sink; this module puts a filesrc before it and an appsink after it:

    filesrc location=FILE ! <text> ! appsink

and hands every output buffer, in order, to a file object, so the bytes
written are those `gst-launch-1.0 filesrc location=FILE ! <text> ! filesink`
writes.

The pipeline is built and started once and reused for every file. Between
two files, the elements that hold no device state (the source, parsers,
boxenc, queues, the sink) go back to READY and start again, so that each
file is a stream of its own (boxenc counts frames from 0, a parser drains at
the file's end), while the GPU filters (every P3dCudaFilter: voxelize,
pillarfeat, nms, pillarencode, bevdetect, bevpool) stay started with their
device, workspaces and model: the next file's stream-start takes them past
the last file's end-of-stream. Start-up is paid once per pipeline, not per
file. After an error the pipeline is torn down; the next file builds a new
one.
"""

import json
import time

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstApp", "1.0")
from gi.repository import GLib, GObject, Gst, GstApp  # noqa: E402,F401

SOURCE_NAME = "p3d-batch-source"
SINK_NAME = "p3d-batch-sink"
DEVICE_PROPERTY = "cuda-device-id"
# How long the reader waits for a buffer before it looks at the bus.
POLL_NS = 20 * Gst.MSECOND
# Warnings kept per file (a saturated voxelize warns once per stream).
MAX_WARNINGS = 8

Gst.init(None)


class PipelineError(Exception):
    """The pipeline text cannot be built, or its elements cannot start."""


class FileFailed(Exception):
    """A file's run ended with an error message on the bus (or no end)."""

    def __init__(self, message, element=None, debug=None):
        super().__init__(message, element, debug)
        self.message = message
        self.element = element
        self.debug = debug

    def __str__(self):
        return self.message


def _items(iterator):
    """The objects a GstIterator yields (PyGObject has no Python iterator
    for it without gst-python's overrides)."""
    items = []
    while True:
        result, value = iterator.next()
        if result == Gst.IteratorResult.OK:
            items.append(value)
        elif result == Gst.IteratorResult.RESYNC:
            iterator.resync()
            items = []
        else:
            return items


def _cuda_filter_type():
    try:
        return GObject.type_from_name("P3dCudaFilter")
    except RuntimeError:
        # the perception plugin is not loaded: no element holds a device
        return None


def _holds_device(element, cuda_type):
    if cuda_type is None:
        return False
    if GObject.type_is_a(element.__gtype__, cuda_type):
        return True
    if isinstance(element, Gst.Bin):
        return any(_holds_device(child, cuda_type)
                   for child in _items(element.iterate_recurse()))
    return False


def _describe(element):
    """What a user wrote for the element: its factory's name, and the name
    given with name= when there is one."""
    factory = element.get_factory() if isinstance(element, Gst.Element) \
        else None
    if factory is None:
        return element.get_name()
    name = element.get_name()
    factory_name = factory.get_name()
    if name in (SOURCE_NAME, SINK_NAME):
        return factory_name
    # automatic names are the type's name and a number
    automatic = name.rstrip("0123456789") == GObject.type_name(
        element.__gtype__).lower()
    return factory_name if automatic else "%s name=%s" % (factory_name, name)


def _count_boxes(structure_name, data):
    """Boxes in one output buffer of boxenc, or None for other outputs."""
    if structure_name == "application/x-json-lines":
        # one buffer is one frame: its frame line, then a line per box
        first = data.split(b"\n", 1)[0]
        try:
            count = json.loads(first).get("count")
        except (ValueError, AttributeError):
            return None
        return count if isinstance(count, int) else None
    if structure_name == "text/x-kitti-label":
        return sum(1 for line in data.split(b"\n") if line.strip())
    return None


class FileResult:
    """What one file gave: frames (output buffers), boxes (None when the
    output is not boxenc's), seconds, and the warnings posted."""

    def __init__(self, frames, boxes, seconds, warnings):
        self.frames = frames
        self.boxes = boxes
        self.seconds = seconds
        self.warnings = warnings


class FilePipeline:
    """One pipeline, started once, run over files one at a time.

    description: the gst-launch text between source and sink, e.g.
    "pointcloudparse preset=kitti ! voxelize ! ... ! boxenc".
    device_id: the CUDA device for every element with a cuda-device-id
    property, unless the text sets one itself; -1 leaves them as they are.
    """

    def __init__(self, description, device_id=-1):
        self.description = description
        self.device_id = device_id
        self.broken = False
        self._first = True
        text = description.strip().strip("!").strip()
        if not text:
            raise PipelineError("the pipeline is empty")
        started = time.monotonic()
        try:
            self.pipeline = Gst.parse_launch(
                "filesrc name=%s ! %s ! appsink name=%s sync=false "
                "async=false enable-last-sample=false" %
                (SOURCE_NAME, text, SINK_NAME))
        except GLib.Error as error:
            raise PipelineError("cannot build the pipeline %r: %s" %
                                (text, error.message)) from None
        self.source = self.pipeline.get_by_name(SOURCE_NAME)
        self.sink = self.pipeline.get_by_name(SINK_NAME)
        self.bus = self.pipeline.get_bus()
        self._set_device()

        cuda_type = _cuda_filter_type()
        downstream_first = _items(self.pipeline.iterate_sorted())
        kept = [e for e in downstream_first if _holds_device(e, cuda_type)]
        # started again for every file: sinks first on the way up, so that
        # nothing flows into an element that is not running yet
        self._restart_up = [e for e in downstream_first if e not in kept]
        self._restart_down = list(reversed(self._restart_up))

        # The GPU filters start now (device, workspaces, model); the rest
        # starts with the first file, when the source has a location.
        try:
            self._change(self.pipeline, Gst.State.READY)
            for element in reversed(kept):
                self._change(element, Gst.State.PAUSED)
        except FileFailed as failure:
            self.close()
            raise PipelineError("the pipeline cannot start: %s" %
                                failure.message) from None
        self.startup_seconds = time.monotonic() - started
        # the path each GPU filter took when it started: cuda, or cpu
        # where there is no device (or backend=cpu)
        self.backends = [
            (_describe(e), e.get_property("active-backend").value_nick)
            for e in reversed(kept)
            if e.find_property("active-backend") is not None]

    def _set_device(self):
        if self.device_id < 0:
            return
        elements = [e for e in _items(self.pipeline.iterate_recurse())
                    if e.find_property(DEVICE_PROPERTY) is not None]
        if any(e.get_property(DEVICE_PROPERTY) != -1 for e in elements):
            return  # the text chose the devices itself
        for element in elements:
            element.set_property(DEVICE_PROPERTY, self.device_id)

    def _error_from_bus(self, warnings=None):
        """The first error among the messages waiting on the bus, which it
        empties (so that messages never pile up over millions of files)."""
        failure = None
        while True:
            message = self.bus.pop()
            if message is None:
                return failure
            if message.type == Gst.MessageType.ERROR and failure is None:
                error, debug = message.parse_error()
                element = _describe(message.src)
                failure = FileFailed("%s: %s" % (element, error.message),
                                     element, debug)
            elif message.type == Gst.MessageType.WARNING and \
                    warnings is not None and len(warnings) < MAX_WARNINGS:
                warning, _ = message.parse_warning()
                warnings.append("%s: %s" % (_describe(message.src),
                                            warning.message))

    def _change(self, element, state):
        if element.set_state(state) == Gst.StateChangeReturn.FAILURE:
            failure = self._error_from_bus()
            raise failure or FileFailed(
                "%s could not change to %s" %
                (_describe(element), Gst.Element.state_get_name(state)))

    def _rewind(self, path):
        """Sets the source on @path and starts the per-file elements."""
        self._error_from_bus()
        if self._first:
            self.source.set_property("location", path)
            self._change(self.pipeline, Gst.State.PLAYING)
            self._first = False
            return
        for element in self._restart_down:
            self._change(element, Gst.State.READY)
        self.source.set_property("location", path)
        for element in self._restart_up:
            self._change(element, Gst.State.PLAYING)
            if element is self.sink:
                # appsink keeps its end-of-stream through READY (1.22);
                # a flush clears it before the new stream comes
                pad = self.sink.get_static_pad("sink")
                pad.send_event(Gst.Event.new_flush_start())
                pad.send_event(Gst.Event.new_flush_stop(False))

    def run(self, path, out=None, timeout=None):
        """Runs the file @path through the pipeline, writing every output
        buffer to the binary file object @out (None: discarded). Returns a
        FileResult; raises FileFailed with the element's error message, after
        which the pipeline is closed (broken)."""
        if self.broken:
            raise RuntimeError("the pipeline failed before; build a new one")
        started = time.monotonic()
        warnings = []
        frames = 0
        boxes = 0
        try:
            self._rewind(path)
            while True:
                sample = self.sink.try_pull_sample(POLL_NS)
                if sample is not None:
                    buffer = sample.get_buffer()
                    ok, info = buffer.map(Gst.MapFlags.READ)
                    if not ok:
                        raise FileFailed("cannot read an output buffer")
                    try:
                        data = bytes(info.data)
                    finally:
                        buffer.unmap(info)
                    if out is not None:
                        out.write(data)
                    frames += 1
                    caps = sample.get_caps()
                    count = _count_boxes(
                        caps.get_structure(0).get_name() if caps else "", data)
                    boxes = None if count is None or boxes is None \
                        else boxes + count
                    continue
                # an element that fails may still push end-of-stream: its
                # error is on the bus by then, so look there first
                failure = self._error_from_bus(warnings)
                if failure is not None:
                    raise failure
                if self.sink.is_eos():
                    break
                if timeout is not None and \
                        time.monotonic() - started > timeout:
                    raise FileFailed("no end-of-stream within %g s" % timeout)
        except BaseException:
            # an error, or the output file failing: the streams are
            # half-way, so this pipeline is not used again
            self.close()
            raise
        return FileResult(frames, boxes, time.monotonic() - started, warnings)

    def close(self):
        self.broken = True
        if self.pipeline is not None:
            self.pipeline.set_state(Gst.State.NULL)
            self.pipeline = None
