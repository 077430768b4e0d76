from setuptools import setup

ENTRY_POINTS = {
    "console_scripts": [
        "usagedemo-legacy = usagedemo.cli:legacy_main",
    ],
}

setup(name="usagedemo", entry_points=ENTRY_POINTS)
