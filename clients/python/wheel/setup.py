"""Builds agentrt's wheel around a native binary. The `agentrt` script is the Go binary itself: it is copied as it
is (setuptools would read a script as Python source) and installed into the environment's bin/. The binary does not
depend on the Python version, so the tag is py3-none-<platform>; scripts/wheel.sh then lets auditwheel narrow
<platform> to the manylinux policy the binary meets."""

import os

from setuptools import Distribution, setup
from setuptools.command.bdist_wheel import bdist_wheel

build_scripts = Distribution().get_command_class("build_scripts")


class PlatformWheel(bdist_wheel):
    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self):
        _, _, plat = super().get_tag()
        return "py3", "none", plat


class CopyBinary(build_scripts):
    def run(self):
        self.mkpath(self.build_dir)
        for script in self.scripts:
            dst = os.path.join(self.build_dir, os.path.basename(script))
            self.copy_file(script, dst)
            os.chmod(dst, 0o755)


setup(cmdclass={"bdist_wheel": PlatformWheel, "build_scripts": CopyBinary})
