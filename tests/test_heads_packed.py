"""The heads' deconvolutions keep a oneDNN-packed weight between fp32 CPU inference calls
(`heads.ConvTranspose2d`): bit-identical to PyTorch's own deconvolution at every geometry the
heads use, packed again when the weight or the input size changes, never used with autograd,
and never saved, pickled or deep-copied."""

import copy
import io

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from realtime.models import build_model, heads

GEOMETRIES = [  # (in, out, kernel, padding, output_padding, input shape): the heads' _DECONV_PADDING
    (32, 24, 4, 1, 0, (1, 32, 8, 6)),
    (24, 16, 3, 1, 1, (2, 24, 5, 7)),
    (16, 8, 2, 0, 0, (1, 16, 4, 4)),
    (1024, 768, 4, 1, 0, (1, 1024, 4, 3)),  # the 0.4B pose head's second deconvolution, small grid
]


def _deconv(cin, cout, kernel, padding, output_padding):
    torch.manual_seed(0)
    return heads.ConvTranspose2d(cin, cout, kernel, stride=2, padding=padding, output_padding=output_padding, bias=False)


def _plain(m: heads.ConvTranspose2d, x: torch.Tensor) -> torch.Tensor:
    return F.conv_transpose2d(x, m.weight, stride=2, padding=m.padding, output_padding=m.output_padding)


@pytest.mark.parametrize("cin,cout,kernel,padding,output_padding,shape", GEOMETRIES)
def test_packed_deconvolution_is_bit_identical(cin, cout, kernel, padding, output_padding, shape):
    m = _deconv(cin, cout, kernel, padding, output_padding)
    x = torch.randn(*shape)
    with torch.inference_mode():
        out = m(x)
        assert m._packed is not None  # the packed path ran
        assert out.is_contiguous() and torch.equal(out, _plain(m, x))
        assert torch.equal(m(x), out)  # and again from the cache


def test_packs_again_when_the_weight_or_the_input_size_changes():
    m = _deconv(32, 24, 4, 1, 0)
    x = torch.randn(1, 32, 8, 6)
    with torch.no_grad():
        m(x)
        first = m._packed[1]
        m.weight.mul_(-2.0)  # an in-place write, as load_state_dict makes
        assert torch.equal(m(x), _plain(m, x))
        assert m._packed[1] is not first
        bigger = torch.randn(2, 32, 10, 7)
        assert torch.equal(m(bigger), _plain(m, bigger))
        assert m._packed[0][2] == (32, 10, 7)


def test_autograd_and_channels_last_inputs_take_the_plain_op():
    m = _deconv(32, 24, 4, 1, 0)
    x = torch.randn(1, 32, 8, 6, requires_grad=True)
    m(x).sum().backward()
    assert m._packed is None and x.grad is not None and m.weight.grad is not None
    with torch.no_grad():
        m(x.detach().contiguous(memory_format=torch.channels_last))
        assert m._packed is None
        m.double()(x.detach().double())
        assert m._packed is None


def test_the_packed_weight_is_never_saved_pickled_or_copied():
    model = build_model("pose", "fixture_e32_h4_l18").eval()
    x = torch.randn(1, 3, 64, 48)
    with torch.no_grad():
        ref = model(x)
    deconvs = [m for m in model.modules() if isinstance(m, heads.ConvTranspose2d)]
    assert len(deconvs) == 2 and all(m._packed is not None for m in deconvs)
    assert not any("_packed" in k for k in model.state_dict())
    buffer = io.BytesIO()
    torch.save(model, buffer)
    buffer.seek(0)
    for other in (copy.deepcopy(model), torch.load(buffer, weights_only=False)):
        assert all(m._packed is None for m in other.modules() if isinstance(m, heads.ConvTranspose2d))
        with torch.no_grad():
            assert torch.equal(other(x), ref)


def test_moving_or_casting_drops_the_packed_copy():
    m = _deconv(32, 24, 4, 1, 0)
    with torch.no_grad():
        m(torch.randn(1, 32, 8, 6))
    assert m._packed is not None
    m.to(memory_format=torch.channels_last)
    assert m._packed is None


def test_heads_use_the_packing_deconvolution_and_in_place_silu():
    model = build_model("seg", "fixture_e32_h4_l18")
    kinds = [type(m) for m in model.decode_head.deconv_layers]
    assert kinds.count(heads.ConvTranspose2d) == 4 and nn.ConvTranspose2d not in kinds
    assert all(m.inplace for m in model.decode_head.modules() if isinstance(m, nn.SiLU))


def test_a_build_without_the_packed_ops_runs_the_plain_op(monkeypatch):
    monkeypatch.setattr(heads, "_packed_deconvolution_ops", lambda: False)
    m = _deconv(32, 24, 4, 1, 0)
    x = torch.randn(1, 32, 8, 6)
    with torch.inference_mode():
        assert torch.equal(m(x), _plain(m, x))
    assert m._packed is None
