#!/usr/bin/env bash
# Checks that a libktune.so exports ktune's public API and nothing else: the C functions
# (ktune_*) and the C++ declarations the public headers mark KTUNE_API. No nlohmann, no standard
# library instantiations, no internal namespace or class. Also checks the SONAME carries the
# version.   check_exports.sh <path/to/libktune.so>
set -euo pipefail
lib=$1
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[[ $soname =~ ^libktune\.so\.[0-9]+\.[0-9]+$ ]] || { echo "FAIL: SONAME '$soname' has no version"; exit 1; }
syms=$(nm -D --defined-only "$lib" | awk '{print $3}' | c++filt)
[[ -n $syms ]] || { echo "FAIL: no exported symbols"; exit 1; }
# Public C++ API, from include/ktune/*.hpp (KTUNE_API declarations).
public='^(ktune::(Status::|codeName\(|TunerOptions::|Autotuner::|Kernel::|KeyReport::|SimLaunchView::|Knobs::|KeyFields::|ArgPack::|ErasedKernel::|addErasedKernel\(|version\(|ops::(rmsnorm|siluMul|gemm|lookupRmsnorm|lookupSiluMul|lookupGemm)\()|ktune_[a-z0-9_]+$)'
bad=$(grep -Ev "$public" <<< "$syms" || true)
if [[ -n $bad ]]; then
  echo "FAIL: libktune exports symbols outside the public API:"
  head -20 <<< "$bad"
  exit 1
fi
for must in ktune_version ktune_family_register ktune_family_call 'ktune::Autotuner::create(' \
    'ktune::version()'; do
  grep -qF "$must" <<< "$syms" || { echo "FAIL: $must is not exported"; exit 1; }
done
echo "exports: $(wc -l <<< "$syms") symbols, all public; SONAME $soname"
