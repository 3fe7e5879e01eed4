"""Build step (setuptools; the metadata is in pyproject.toml): the folders a user edits by hand sit at the
top of the checkout (hardware_profiles/, model_presets/, engine_profiles/), and the wheel carries a copy of
each inside the package as planner/data/<folder>, where ``planner.model.catalog`` finds them once installed."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

#: Kept equal to ``planner.model.catalog.USER_FOLDERS`` (tests/test_packaging.py checks).
USER_FOLDERS = ("hardware_profiles", "model_presets", "engine_profiles")


#: The files of the user folders the wheel carries: the TOML profiles, and each engine version's flag table
#: (``engine_profiles/<engine>/<version>-flags.json``, ``planner.model.engine_flags``).
DATA_PATTERNS = ("*.toml", "*-flags.json")


class BuildWithUserFolders(build_py):
    """``build_py``, then each user folder's data files (sub-folders kept) copied into ``planner/data/<folder>/``."""

    def run(self) -> None:
        super().run()
        root = Path(__file__).resolve().parent
        for folder in USER_FOLDERS:
            target = Path(self.build_lib) / "planner" / "data" / folder
            sources = {src for pattern in DATA_PATTERNS for src in (root / folder).rglob(pattern)}
            for src in sorted(sources):  # engine_profiles/<engine>/<version>.toml and -flags.json too
                dest = target / src.relative_to(root / folder)
                self.mkpath(str(dest.parent))
                self.copy_file(str(src), str(dest))


setup(cmdclass={"build_py": BuildWithUserFolders})
