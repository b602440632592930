#!/bin/sh
# Test wrapper for `meson test --setup=leaks`: runs the test under
# GStreamer's leaks tracer and fails when the tracer reports a GstObject or
# GstMiniObject still alive at gst_deinit().
log=$(mktemp)
GST_TRACERS=leaks GST_DEBUG="GST_TRACER:7" GST_DEBUG_NO_COLOR=1 \
  GST_DEBUG_FILE="$log" "$@"
status=$?
# Real records carry an address; the tracer also logs its record format,
# which names object-alive too.
if grep "object-alive" "$log" | grep -q "address=(gpointer)0x"; then
  echo "leaks tracer: objects alive at exit:"
  grep "object-alive" "$log" | grep "address=(gpointer)0x" | head -20
  status=1
fi
rm -f "$log"
exit $status
