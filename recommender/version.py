"""litrank's version: one place, read by the package, the CLI, the files it writes and the build
(``pyproject.toml`` takes it from here)."""
__version__ = "0.1.0"
