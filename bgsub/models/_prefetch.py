"""Cache prefetch hints for the frame loops that visit pixels out of order.

:func:`prefetch_state` asks the CPU to load one pixel's samples, coefficients and
ring while the loop still works on earlier pixels (the bounded engine's deferred
pixels, :mod:`bgsub.models._bounded_frame`; the pixels whose nu-NORMA step adds a term,
:mod:`bgsub.models._norma_frame`; the illumination estimate's grid, :mod:`bgsub.models._illumination`). A
hint only: nothing computed depends on it.

This module imports only numba and llvmlite.
"""

from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["PREFETCH_AHEAD", "prefetch_state"]

#: How many listed pixels ahead the loops over a row's deferred pixels prefetch their state. olkn's bounded frame
#: kernel at 1920x1080 took 0.955x its time with 12 against 8 (0.965x at 1280x720, the same at 320x240; 10, 16 and 20
#: within 0.01 of 12, 4 and 6 slower); norma's update pass the same with 12 and 16 (docs/performance.md).
PREFETCH_AHEAD = 12


@intrinsic
def _prefetch(typingctx, address):
    """Hint the cache to load the line at ``address`` (LLVM's ``prefetch``: read, high locality)."""
    sig = types.void(types.intp)

    def codegen(context, builder, signature, args):
        ptr = builder.inttoptr(args[0], ir.PointerType(ir.IntType(8)))
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [ptr.type, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        builder.call(fn, [ptr, ir.Constant(i32, 1), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return sig, codegen


@njit(cache=True, inline="always")
def prefetch_state(sb, cb, rb, p, B, nc):
    """Prefetch pixel ``p``'s samples, coefficients and ring (the first and last byte of each): ``sb``, ``cb``,
    ``rb`` are the addresses of the uint8 samples (``B * nc`` a pixel), the float32 coefficients (``B``) and the
    int64 ``[start, count]`` rings."""
    a = sb + p * B * nc
    _prefetch(a)
    _prefetch(a + B * nc - 1)
    a = cb + p * B * 4
    _prefetch(a)
    _prefetch(a + B * 4 - 1)
    _prefetch(rb + p * 16)
