"""bench/gpu_check.py without a GPU: its dry run (every part's logic at tiny scale on the CPU) writes a
valid record with every mode, seg rate and microbenchmark part; the plan of the lent GPU's one call
fits its time; parts can be left out; an unwritable record folder is said once and the check goes on."""

import argparse

import pytest

import bench.gpu_check as check
from bench import gpu_kernels, gpu_record


def _args(*argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip", nargs="+", default=[])
    parser.add_argument("--modes", nargs="+", default=check.PLANNED_MODES)
    parser.add_argument("--skip-compiled", action="store_true")
    parser.add_argument("--people", type=int, default=1)
    args = parser.parse_args(argv)
    return args


def test_the_dry_run_writes_a_record_of_every_part(tmp_path, capsys):
    assert check.main(["--dry-run", "--record-dir", str(tmp_path / "runs"), "--work-dir", str(tmp_path / "work"),
                       "--frames", "2"]) == 0
    out = capsys.readouterr().out
    assert "plan (seconds on an H100" in out and "record: " in out
    (path, record), = gpu_record.records(tmp_path / "runs")
    assert record["dry_run"] is True and "dry run" in record["device"] and record["input_size"] == "64x48"
    got = {(row["mode"], row.get("people", 1), row["seg_every"]) for row in record["results"]}
    want = {(mode, 1, every) for mode in check.PLANNED_MODES for every in (1, 2)} | {("default", 3, 1), ("default", 3, 2)}
    assert got == want
    for row in record["results"]:
        assert row["fps"] > 0 and row["warmup_s"] >= 0 and row["config"]["max_batch"] >= 1
    (again,) = [row for row in record["results"] if row.get("process") == "second launch"]  # a process of its own
    assert again["mode"] == "default" and again["compile_cache_loaded"] is False  # a dry run compiles nothing to keep
    checks = {(row["path"], row.get("task")): row for row in record["checks"]}
    assert all(checks[(path, task)]["ok"] for path in ("default", "dual backbone") for task in ("pose", "seg"))
    assert "runs on CUDA GPUs" in checks[("sdpa triton", None)]["error"]  # the CPU: said, not a failure of the dry run
    benches = record["microbenchmarks"]
    assert set(benches) == {"linear", "attention", "fused", "profile", "detector"}
    kinds = {row["kind"] for row in benches["linear"]}
    assert {"bf16", "fp8 tensor-wise", "fp8 row-wise", "bf16, two models stacked (baddbmm)"} <= kinds
    timed = [row for row in benches["linear"] if "us" in row]
    assert {row["m"] for row in timed} == set(gpu_kernels.DRY_SHAPES.rows)
    assert all(row["error_vs_reference"] < 0.1 for row in timed if "fp8" in row["kind"])  # E4M3: a few per cent
    backends = {row["backend"] for row in benches["attention"] if "us" in row}
    assert {"default", "flash", "flex"} <= backends
    assert all(row["error_vs_reference"] < 1e-4 for row in benches["attention"] if "us" in row)  # fp32 on the CPU
    assert any(row.get("error") == "needs CUDA" for row in benches["attention"] if row["backend"] == "cudnn")
    modes = {row["mode"] for row in benches["profile"]}
    assert modes == {m for m in check.PLANNED_MODES if check.MODES[m].profile}
    assert any(row["kind"] == "gemm" and row.get("us", 0) > 0 for row in benches["profile"])


def test_the_lent_gpus_call_fits_its_time():
    """`--no-tests` (what a 15-minute GPU session runs): about 8 minutes on an H100 by the counted plan;
    with the tests it does not fit, and the plan says so."""
    lent = check.plan(_args("--skip", "tests"))
    names = [name for name, _ in lent]
    assert names[0] == "start" and {"checks", "kernels", "second launch", "detector"} <= set(names)
    assert {f"fps {mode}" for mode in check.PLANNED_MODES} <= set(names)
    assert sum(s for _, s in lent) <= check.PLANNED_S
    assert sum(s for _, s in check.plan(_args())) > check.PLANNED_S  # the GPU tests take 5-6 minutes more
    assert dict(check.plan(_args("--skip", "tests", "--skip-compiled"))).keys() == {
        "start", "checks", "kernels", "detector", *(f"fps {m}" for m in check.PLANNED_MODES if not check.MODES[m].compiled)}


def test_parts_can_be_left_out_and_an_unwritable_folder_is_said_once(tmp_path, capsys):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    assert check.main(["--dry-run", "--record-dir", str(blocker), "--work-dir", str(tmp_path / "work"), "--skip", "checks",
                       "kernels", "fps", "detector"]) == 0
    out = capsys.readouterr().out
    assert out.count("could not write the run's record") == 1 and "record: " not in out
    assert check.plan(_args("--skip", "tests", "checks", "kernels", "fps", "profile", "detector")) == [("start", check.START_S)]


@pytest.mark.parametrize("name, kind", [
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas",
     "gemm"),
    ("nvjet_tst_128x256_64x4_2x1_v_bz_coopB_TNT", "gemm"),
    ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x64_4x1x1_kernel0_0", "attention"),
    ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4> >(Flash_fwd_params)", "attention"),
    ("sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64", "convolution"),
    ("sm80_xmma_dgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize64x64x64_stage5", "convolution"),
    ("triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_1", "fused (triton)"),
    ("triton_tem_fused_addmm_0", "gemm"),
    ("Memcpy HtoD (Pinned -> Device)", "copy"),
    ("void at::native::(anonymous namespace)::upsample_bilinear2d_out_frame<c10::BFloat16, float>", "other"),
    ("_attn_fwd", "attention"),
])
def test_profiled_kernels_are_summed_by_kind(name, kind):
    assert gpu_kernels.kernel_kind(name) == kind
