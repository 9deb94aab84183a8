"""@ktune.jit and @ktune.autotune: a CUDA/HIP C++ kernel registered as a tuned family on the C++
engine (the same engine, tuning database and code-object store as the C++ API and the CLI)."""


from . import _args, _signature, _space, _tuners
from . import _ktune
from ._errors import InvalidArgument


class JitKernel:
    """A kernel source with its entry, signature and launch rule (expressions; see the README)."""

    def __init__(self, source, entry, signature, grid, block=None, shared_bytes=None,
                 compile_options=(), sim_run=None, sim_cost=None, programmatic_wait=False):
        self.source, self.entry = source or "", entry or ""
        if signature is None and not source:
            raise InvalidArgument(f"kernel {entry!r}: no source to read the signature from; "
                                  "pass signature=")
        self.signature = (_signature.normalise(signature) if signature is not None
                          else _signature.from_source(source, entry))
        self.grid = [grid] if isinstance(grid, str) else list(grid or ())
        self.block = [block] if isinstance(block, str) else list(block or ())
        self.shared_bytes = shared_bytes
        self.compile_options = list(compile_options)
        self.sim_run, self.sim_cost = sim_run, sim_cost
        # The source runs KTUNE_PDL_WAIT() before touching memory: calls may launch it as a
        # programmatic dependent launch (sm_90+; KTUNE_PDL). Never set it without the wait.
        self.programmatic_wait = bool(programmatic_wait)


def jit(fn=None, *, grid, block=None, shared_bytes=None, entry=None, source=None,
        compile_options=(), sim_run=None, sim_cost=None):
    """Decorates a function whose docstring is the kernel's C++ source (or pass source=; none
    with @ktune.autotune(source_fn=...)). Its
    parameters, annotated with "ptr"/"i32"/"i64"/"f32"/"f64", are the kernel's signature; the
    function's name is the extern "C" entry unless `entry` is given."""
    def wrap(f):
        # No source: @ktune.autotune(source_fn=...) must generate the modules (checked there).
        text = source if source is not None else (f.__doc__ or "")
        sig = _signature.from_function(f)
        return JitKernel(text, entry or f.__name__, sig, grid, block, shared_bytes,
                         compile_options, sim_run, sim_cost)
    return wrap(fn) if fn is not None else wrap


def kernel(source, entry, *, grid, block=None, signature=None, **kw):
    """A kernel from a source string (the signature is read from the source when not given).
    With @ktune.autotune(source_fn=...) the source is None and the signature is required."""
    return JitKernel(source, entry, signature, grid, block, **kw)


def _configs(configs, space, constraints, prune_configs_by, prune):
    """(configs or None, constraint expressions): Python predicates and prune hooks are applied
    here, once, at registration (the engine's space is fixed per family)."""
    callables = [c for c in constraints if callable(c)]
    exprs = [c for c in constraints if not callable(c)]
    early = (prune_configs_by or {}).get("early_config_prune")
    if configs is None and (callables or prune or early):
        configs = _space.expand(space, callables)
        callables = []
    if configs is not None:
        configs = [c if isinstance(c, _space.Config) else _space.Config(c) for c in configs]
        if callables:
            configs = [c for c in configs if all(p(c.all_kwargs()) for p in callables)]
        if prune:
            configs = [c for c in configs if prune(c)]
        if early:
            configs = list(early(configs, {}))
    return configs, exprs


class Autotuned(_ktune.Launcher):
    """A tuned kernel: call it with the kernel's arguments (tensors, __cuda_array_interface__ or
    DLPack objects, device addresses, numpy arrays on the simulated backend, Python scalars) and an
    optional stream=. The first call per key tunes (unless the database knows the key).
    A call is handled in C++ (the Launcher base: no Python frame) once the kernel is bound; what
    the fast path does not handle (keyword arguments, numpy arrays, objects without data_ptr(),
    hooks) comes to _slow_call."""

    def __init__(self, jk, configs, space, constraints, key, name, default, reset_to_zero,
                 restore_value, tuner_options, source_fn=None):
        if not isinstance(jk, JitKernel):
            raise InvalidArgument("@ktune.autotune decorates a @ktune.jit kernel or ktune.kernel()")
        if source_fn is not None and jk.source:
            raise InvalidArgument(f"{jk.entry or name}: source_fn replaces the kernel's source; "
                                  "give one of them (ktune.kernel(None, entry, signature=...))")
        if source_fn is None and not jk.source:
            raise InvalidArgument(f"{jk.entry or name}: no source (a docstring, source=) and no "
                                  "source_fn")
        self.jit = jk
        self._source_fn = source_fn
        self.space_json, knobs = _space.encode(configs, space, constraints, default)
        self.name = name or jk.entry
        self.key = list(key)
        self.arg_names = [n for n, _ in jk.signature]
        self._hook_args = [self._index(n) for n in (reset_to_zero or ())], \
                          [self._index(n) for n in (restore_value or ())]
        self._hooks = bool(self._hook_args[0] or self._hook_args[1])
        if not jk.block and "num_warps" in knobs:
            jk.block = ["num_warps * warp_size"]
        self._tuner_options = tuner_options
        self._k = None
        self._device = 0
        self._gen = -1
        self._slot = None

    def _index(self, name):
        if name not in self.arg_names:
            raise InvalidArgument(f"{name!r} is not an argument of {self.jit.entry}")
        return self.arg_names.index(name)

    def _bind(self):
        t = _tuners.get_tuner(**self._tuner_options)
        jk = self.jit
        self._sim = t.backend == "sim"
        if self._sim and (jk.sim_run or jk.sim_cost):
            _ktune.register_sim_kernel(t, jk.entry, [ty for _, ty in jk.signature],
                                       jk.sim_run, jk.sim_cost)
        spec = {"name": self.name, "source": jk.source, "entry": jk.entry,
                "space_json": self.space_json, "args": jk.signature, "key": self.key,
                "grid": jk.grid, "block": jk.block, "shared_bytes": jk.shared_bytes,
                "compile_options": jk.compile_options, "programmatic_wait": jk.programmatic_wait,
                # Only with hooks: the engine then takes the GIL before every benchmark run.
                "before_run": _args.HookSlot() if self._hooks else None,
                "source_fn": (_args.SourceFn(self._source_fn) if self._source_fn is not None
                              else None)}
        self.tuner = t
        self._k, registered = _tuners.kernel_for(t, spec, _ktune.add_kernel)
        self._slot = registered["before_run"]  # shared by every declaration of the family
        self._device = t.options()["device"]
        _args.install_torch_api(t.backend)
        getter = _args.stream_getter(t.backend)
        self._stream = (lambda: 0) if getter is None else (lambda: getter(self._device))
        self._gen = _tuners.generation()
        self._set_fast(None if self._hooks else self._k, getter, self._device)

    def _slow_call(self, *args, stream=None, **kwargs):
        if self._gen != _tuners.generation():
            self._bind()
        if kwargs:
            args = _args.bind(self.arg_names, args, kwargs)
        if stream is None:
            stream = self._stream()
        elif not isinstance(stream, int):
            stream = _args.stream_int(stream)
        if self._sim:
            return _args.call_with_host_arrays(self, args, stream)
        if self._hooks:
            return self._call_hooked(args, stream)
        self._k(args, stream)

    def _call_hooked(self, args, stream, fn=None):
        """A call of a kernel with reset_to_zero / restore_value: if it tunes, the engine calls the
        family's before_run before every run (HookSlot): the restore_value arguments are put back
        as they were before the first run and the reset_to_zero ones zeroed, outside the timed
        region, and once more before the winner runs on the caller's inputs."""
        slot = self._slot
        slot.pending = _args.Pending(args, *self._hook_args, self._device)
        try:
            return (fn or self._k)(args, stream)
        finally:
            slot.pending = None

    def tune(self, *args, stream=None):
        """Tunes the arguments' key now (even if known) and returns the report as a dict."""
        import json
        if self._gen != _tuners.generation():
            self._bind()
        if stream is None:
            stream = self._stream()
        elif not isinstance(stream, int):
            stream = _args.stream_int(stream)
        tune = (lambda a, s: self._call_hooked(a, s, self._k.tune)) if self._hooks else self._k.tune
        return json.loads(_args.run_with(self, args, stream, tune))

    def key_of(self, *args):
        if self._gen != _tuners.generation():
            self._bind()
        return _args.run_with(self, args, None, lambda a, s: self._k.key(a))

    def report(self, *args):
        """What the database holds for the arguments' key (dict); ktune.NotFound if not tuned."""
        import json
        key = self.key_of(*args)  # binds the kernel to its tuner first (report before any call)
        return json.loads(self.tuner.report(self.name, key))


_ktune.enable_vectorcall(Autotuned)  # a call reaches the C++ fast path with no argument tuple


def autotune(configs=None, key=(), *, space=None, constraints=(), prune_configs_by=None,
             prune=None, reset_to_zero=None, restore_value=None, warmup=None, rep=None,
             name=None, default=None, backend=None, cache_dir=None, remote_cache=None,
             source_fn=None, **options):
    """Like triton.autotune, for a @ktune.jit kernel. configs: [ktune.Config] (or dicts), or
    space={knob: [values]} with constraints (expressions over knobs, or Python predicates on a
    config dict). key: expressions over the integer arguments ("n", "pow2(n)"). warmup/rep: the
    do_bench budgets in ms. prune(config) -> bool and prune_configs_by={"early_config_prune":
    fn(configs, named_args)} run once at registration (named_args is {}). source_fn(config) ->
    (text, language) or (text, language, entry) generates each config's module instead of the
    kernel's C++ source (language "ptx", "cuda", "llvm", "mlir", "cubin", ...; config is a dict
    of knob values; an exception fails that config with its message). Autotuner options (backend,
    cache_dir, remote_cache, tuning, ...) select the tuner; unset ones come from ktune.set_options
    and the environment."""
    configs, exprs = _configs(configs, space, constraints, prune_configs_by, prune)
    tuner_options = dict(options, warmup_ms=warmup, rep_ms=rep, backend=backend,
                         cache_dir=cache_dir, remote_cache=remote_cache)

    def wrap(jk):
        return Autotuned(jk, configs, space, exprs, key, name, default, reset_to_zero,
                         restore_value, tuner_options, source_fn)
    return wrap


