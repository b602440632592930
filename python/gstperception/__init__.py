"""gst-perception from Python.

- gstperception.filepipeline: a gst-launch pipeline run over many files,
  one after another, built once and reused (PyGObject).
- gstperception.batch: the p3d-batch command, which runs such a pipeline
  over a dataset on a Dask cluster, one pipeline per GPU per worker
  (docs/cluster.md).
"""
