"""benchmarks/kernel_perf.py: samples counted by offset into a kernel's code, and the report of its hottest parts."""

import shutil

import pytest

from tests._scripts import load_benchmark


def test_samples_by_offset_and_the_report():
    kp = load_benchmark("kernel_perf")
    base = 0x7F0000001000
    ips = [base + 0x10] * 6 + [base + 0x14] * 3 + [base - 8, base + 0x9000] + [base + 0x600]
    counts, total = kp.count_offsets(ips, base, 0x1000)
    assert total == 12 and counts == {0x10: 6, 0x14: 3, 0x600: 1}  # outside the span: counted in the total only
    text = {0x0: "push %rbp", 0x8: "mov (%rdi),%eax", 0x10: "add %eax,%ecx", 0x14: "ret", 0x600: "nop"}
    out = kp.report(counts, total, text, top=2, before=1)
    assert "in the kernel's code: 10 (83.3 %)" in out
    assert "+0x00000   75.0 %" in out and "+0x00600    8.3 %" in out  # the 512-byte blocks
    hot = out.split("hottest instructions")[1]
    assert hot.index("50.00 %") < hot.index("25.00 %")
    assert "+0x00008   0.00  mov (%rdi),%eax" in hot and "+0x00010  50.00  add %eax,%ecx" in hot


@pytest.mark.skipif(shutil.which("objdump") is None, reason="objdump (binutils) is not installed")
def test_disassembly_by_offset():
    kp = load_benchmark("kernel_perf")
    # push %rbp; mov %rsp,%rbp; movabs $0x1122334455667788,%rax (10 bytes: objdump wraps its bytes); ret
    code = bytes.fromhex("55" "4889e5" "48b88877665544332211" "c3")
    text = kp.disassemble(code)
    assert sorted(text) == [0, 1, 4, 14]
    assert text[0].startswith("push") and text[4].startswith("movabs") and text[14].startswith("ret")
