"""Builds ktune's extension (python/CMakeLists.txt) with CMake and puts it, with libktune, in the
package. Environment:
  KTUNE_BUILD_DIR=DIR   reuse this CMake build tree of the repository (CI's Release build): only
                        the extension is compiled there; the C++ core is not built twice.
  KTUNE_CMAKE_ARGS="…"  extra arguments for a fresh configure (ignored with KTUNE_BUILD_DIR).
Without KTUNE_BUILD_DIR a tree is configured in build/cmake/ of this package (Release, no tests,
benches or examples)."""
import glob
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _pybind11_dir():
    """pybind11's CMake directory when it came from pip (the GPU machine); None: the system's."""
    try:
        import pybind11  # noqa: PLC0415
        return pybind11.get_cmake_dir()
    except ImportError:
        return None


def _configure(build_dir, fresh):
    args = ["cmake", "-S", ROOT, "-B", build_dir, "-DKTUNE_BUILD_PYTHON=ON",
            "-DPYTHON_EXECUTABLE=" + sys.executable, "-DPython_EXECUTABLE=" + sys.executable]
    pb = _pybind11_dir()
    if pb:
        args.append("-Dpybind11_DIR=" + pb)
    if fresh:
        args += ["-DCMAKE_BUILD_TYPE=Release", "-DKTUNE_BUILD_TESTS=OFF",
                 "-DKTUNE_BUILD_BENCH=OFF", "-DKTUNE_BUILD_EXAMPLES=OFF"]
        if shutil.which("ninja"):
            args += ["-G", "Ninja"]
        args += shlex.split(os.environ.get("KTUNE_CMAKE_ARGS", ""))
    subprocess.check_call(args)


def _cached(build_dir, name):
    try:
        with open(os.path.join(build_dir, "CMakeCache.txt")) as f:
            for line in f:
                if line.startswith(name + ":"):
                    return line.split("=", 1)[1].strip()
    except OSError:
        pass
    return None


class CMakeBuild(build_ext):
    def run(self):
        # setuptools clears `inplace` while building and then copies only the extension.
        self._sources_too = bool(self.inplace)
        super().run()

    def build_extension(self, ext):
        reuse = os.environ.get("KTUNE_BUILD_DIR")
        if reuse:
            build_dir = reuse if os.path.isabs(reuse) else os.path.join(ROOT, reuse)
        else:
            build_dir = os.path.join(HERE, "build", "cmake")
        module = os.path.join(build_dir, "python", "ktune",
                              "_ktune" + sysconfig.get_config_var("EXT_SUFFIX"))
        # A tree that already builds the extension for this Python's ABI is only built (the C++
        # core there is up to date: nothing is compiled twice); otherwise it is configured first.
        if _cached(build_dir, "KTUNE_BUILD_PYTHON") not in ("ON", "TRUE", "1"):
            _configure(build_dir, fresh=not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")))
        self._build(build_dir)
        if not os.path.exists(module):  # configured for another Python
            _configure(build_dir, fresh=False)
            self._build(build_dir)
        if not os.path.exists(module):
            raise RuntimeError(f"{module} was not built")
        dest = os.path.dirname(os.path.abspath(self.get_ext_fullpath(ext.name)))
        os.makedirs(dest, exist_ok=True)
        shutil.copy2(module, self.get_ext_fullpath(ext.name))
        self._copy_runtime(build_dir, dest)
        if self._sources_too:  # setuptools copies the extension into the sources, not the rest
            self._copy_runtime(build_dir, os.path.join(HERE, "ktune"))

    @staticmethod
    def _build(build_dir):
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
        subprocess.check_call(["cmake", "--build", build_dir, "--target", "_ktune", "ktune",
                               "-j", jobs])

    @staticmethod
    def _copy_runtime(build_dir, dest):
        # ktune._ktune_torch, where CMake built it (a CUDA build of torch was importable); a stale
        # one from an earlier build is not left behind.
        torch_module = os.path.join(build_dir, "python", "ktune",
                                    "_ktune_torch" + sysconfig.get_config_var("EXT_SUFFIX"))
        torch_dest = os.path.join(dest, os.path.basename(torch_module))
        if _cached(build_dir, "KTUNE_PYTHON_TORCH") in ("ON", "TRUE", "1") and \
                os.path.exists(torch_module):
            shutil.copy2(torch_module, torch_dest)
        elif os.path.exists(torch_dest):
            os.remove(torch_dest)
        # libktune under its soname (the extension's run path is $ORIGIN), and the CLI.
        for lib in glob.glob(os.path.join(build_dir, "api", "libktune.so.*")):
            if not os.path.islink(lib):
                soname = "libktune.so." + ".".join(lib.rsplit(".so.", 1)[1].split(".")[:2])
                shutil.copy2(lib, os.path.join(dest, soname))
        os.makedirs(os.path.join(dest, "bin"), exist_ok=True)
        for tool in ("ktune", "ktune-worker"):
            src = os.path.join(build_dir, "tools", tool)
            if os.path.exists(src):
                shutil.copy2(src, os.path.join(dest, "bin", tool))


setup(ext_modules=[Extension("ktune._ktune", sources=[])], cmdclass={"build_ext": CMakeBuild})
