"""Only the optional C extension lives here; everything else is in pyproject.toml.

``connect_runtime.clients._bulk_produce`` speeds up the bulk copy at small records
(connect_runtime/clients/bulk_produce.py says why). It is optional: without a C compiler the install
goes on and the Python loop produces instead.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "connect_runtime.clients._bulk_produce",
            sources=["connect_runtime/clients/_bulk_produce.c"],
            extra_compile_args=["-O2", "-Wall", "-Wno-unused-parameter"],
            optional=True,
        )
    ]
)
