"""What a `torch.load(...)` reads, as far as the file shows it: whether it holds something torch's weights-only
unpickler refuses (anything but tensors, containers of them and plain Python values).

``refused_content(facts, load)`` answers in words ("a whole `nn.Module`", "an object with `.proof_search()`",
"numpy values under `'loss'`") when the source establishes it, else None:

- the loaded value is called (`model = torch.load(p); model(x)`) or a method is called on it that no tensor, no
  container and no plain value has (`agent.proof_search(...)`, `model.eval()`): it is some other object;
- the file saves with `torch.save` what it loads (the same path, or a dict whose keys the loaded value is read
  with): a module, an argparse namespace, numpy values (through names, `self.<attr>` lists filled with `append`,
  and the file's own functions' returns).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from trainlint.facts.calls import call_graph, is_parameter
from trainlint.facts.constants import string_of
from trainlint.facts.expr import argument, literal
from trainlint.facts.objects import Module
from trainlint.facts.program import program
from trainlint.facts.walk import iter_nodes

if TYPE_CHECKING:
    from trainlint.facts.core import Facts
    from trainlint.facts.scopes import Binding

_MAX_DEPTH = 6

#: the public attributes of what the weights-only unpickler gives: `torch.Tensor`, `nn.Parameter`, `torch.Size`,
#: `torch.dtype`, `torch.device`, `dict`, `OrderedDict`, `list`, `tuple`, `set`, `str`, `bytes`, `int`, `float`,
#: `complex`, `bool` (read with `dir()` from torch 2.13 and CPython 3.11). A method of a loaded value outside
#: this set shows that the value is another kind of object.
WEIGHTS_ONLY_ATTRIBUTES = frozenset("""
H T abbr abs abs_ absolute absolute_ acos acos_ acosh acosh_ add add_ addbmm addbmm_ addcdiv addcdiv_ addcmul
addcmul_ addmm addmm_ addmv addmv_ addr addr_ adjoint all allclose amax amin aminmax angle any append apply_
arccos arccos_ arccosh arccosh_ arcsin arcsin_ arcsinh arcsinh_ arctan arctan2 arctan2_ arctan_ arctanh arctanh_
argmax argmin argsort argwhere as_integer_ratio as_strided as_strided_ as_strided_scatter as_subclass asin asin_
asinh asinh_ atan atan2 atan2_ atan_ atanh atanh_ backward baddbmm baddbmm_ bernoulli bernoulli_ bfloat16
bincount bit_count bit_length bitwise_and bitwise_and_ bitwise_left_shift bitwise_left_shift_ bitwise_not
bitwise_not_ bitwise_or bitwise_or_ bitwise_right_shift bitwise_right_shift_ bitwise_xor bitwise_xor_ bmm bool
broadcast_to byte capitalize casefold cauchy_ ccol_indices cdouble ceil ceil_ center cfloat chalf char cholesky
cholesky_inverse cholesky_solve chunk clamp clamp_ clamp_max clamp_max_ clamp_min clamp_min_ clear clip clip_
clone coalesce col_indices conj conj_physical conj_physical_ conjugate const_data_ptr contiguous copy copy_
copysign copysign_ corrcoef cos cos_ cosh cosh_ count count_nonzero cov cpu cross crow_indices cuda cummax
cummin cumprod cumprod_ cumsum cumsum_ data data_ptr decode deg2rad deg2rad_ denominator dense_dim dequantize
det detach detach_ device diag diag_embed diagflat diagonal diagonal_scatter diff difference difference_update
digamma digamma_ dim dim_order discard dist div div_ divide divide_ dot double dsplit dtype eig element_size
encode endswith eq eq_ equal erf erf_ erfc erfc_ erfinv erfinv_ exp exp2 exp2_ exp_ expand expand_as expandtabs
expm1 expm1_ exponential_ extend fill_ fill_diagonal_ find fix fix_ flatten flip fliplr flipud float float_power
float_power_ floor floor_ floor_divide floor_divide_ fmax fmin fmod fmod_ format format_map frac frac_ frexp
from_bytes fromhex fromkeys gather gcd gcd_ ge ge_ geometric_ geqrf ger get get_device grad grad_dtype grad_fn
greater greater_ greater_equal greater_equal_ gt gt_ half hardshrink hash_tensor heaviside heaviside_ hex histc
histogram hsplit hypot hypot_ i0 i0_ igamma igamma_ igammac igammac_ imag index index_add index_add_ index_copy
index_copy_ index_fill index_fill_ index_put index_put_ index_reduce index_reduce_ index_select indices inner
insert int int_repr intersection intersection_update inverse ipu is_coalesced is_complex is_conj is_contiguous
is_cpu is_cuda is_distributed is_floating_point is_inference is_integer is_ipu is_leaf is_maia is_meta is_mkldnn
is_mps is_mtia is_neg is_nested is_nonzero is_pinned is_quantized is_same_size is_set_to is_shared is_signed
is_sparse is_sparse_csr is_vulkan is_xla is_xpu isalnum isalpha isascii isclose isdecimal isdigit isdisjoint
isfinite isidentifier isinf islower isnan isneginf isnumeric isposinf isprintable isreal isspace issubset
issuperset istft istitle isupper item items itemsize join keys kron kthvalue layout lcm lcm_ ldexp ldexp_ le le_
lerp lerp_ less less_ less_equal less_equal_ lgamma lgamma_ ljust log log10 log10_ log1p log1p_ log2 log2_ log_
log_normal_ log_softmax logaddexp logaddexp2 logcumsumexp logdet logical_and logical_and_ logical_not
logical_not_ logical_or logical_or_ logical_xor logical_xor_ logit logit_ logsumexp long lower lstrip lstsq lt
lt_ lu lu_solve mH mT maketrans map2_ map_ masked_fill masked_fill_ masked_scatter masked_scatter_ masked_select
matmul matrix_exp matrix_power max maximum mean median min minimum mm mode module_load move_to_end moveaxis
movedim msort mtia mul mul_ multinomial multiply multiply_ mv mvlgamma mvlgamma_ name nan_to_num nan_to_num_
nanmean nanmedian nanquantile nansum narrow narrow_copy nbytes ndim ndimension ne ne_ neg neg_ negative
negative_ nelement new new_empty new_empty_strided new_full new_ones new_tensor new_zeros nextafter nextafter_
nonzero nonzero_static norm normal_ not_equal not_equal_ numel numerator numpy orgqr ormqr outer output_nr
partition permute pin_memory pinverse polygamma polygamma_ pop popitem positive pow pow_ prelu prod put put_
q_per_channel_axis q_per_channel_scales q_per_channel_zero_points q_scale q_zero_point qr qscheme quantile
rad2deg rad2deg_ random_ ravel real reciprocal reciprocal_ record_stream register_hook
register_post_accumulate_grad_hook reinforce relu relu_ remainder remainder_ remove removeprefix removesuffix
renorm renorm_ repeat repeat_interleave replace requires_grad requires_grad_ reshape reshape_as resize resize_
resize_as resize_as_ resize_as_sparse_ resolve_conj resolve_neg retain_grad retains_grad reverse rfind rindex
rjust roll rot90 round round_ row_indices rpartition rsplit rsqrt rsqrt_ rstrip scatter scatter_ scatter_add
scatter_add_ scatter_reduce scatter_reduce_ select select_scatter set_ setdefault sgn sgn_ shape share_memory_
short sigmoid sigmoid_ sign sign_ signbit sin sin_ sinc sinc_ sinh sinh_ size slice_inverse slice_scatter
slogdet smm softmax solve sort sparse_dim sparse_mask sparse_resize_ sparse_resize_and_clear_ split
split_with_sizes splitlines sqrt sqrt_ square square_ squeeze squeeze_ sspaddmm startswith std stft storage
storage_offset storage_type stride strip sub sub_ subtract subtract_ sum sum_to_size svd swapaxes swapaxes_
swapcase swapdims swapdims_ symeig symmetric_difference symmetric_difference_update t t_ take take_along_dim tan
tan_ tanh tanh_ tensor_split tile title to to_bytes to_complex to_dense to_mkldnn to_padded_tensor to_real
to_sparse to_sparse_bsc to_sparse_bsr to_sparse_coo to_sparse_csc to_sparse_csr tolist topk trace translate
transpose transpose_ triangular_solve tril tril_ triu triu_ true_divide true_divide_ trunc trunc_ type type_as
unbind unflatten unfold uniform_ union unique unique_consecutive unsafe_chunk unsafe_split
unsafe_split_with_sizes unsqueeze unsqueeze_ untyped_storage update upper values var vdot view view_as volatile
vsplit where xlogy xlogy_ xpu zero_ zfill
""".split())
#: methods that give a plain value (a number, a list, a state dict) whatever they are called on
_PLAIN_METHODS = frozenset({"item", "tolist", "state_dict", "cpu", "detach"})
_PLAIN_BUILTINS = frozenset({"float", "int", "str", "bool", "round", "len"})


def refused_content(facts: Facts, load: cst.Call) -> str | None:
    """What ``load`` (a `torch.load(...)` call) reads that the weights-only unpickler refuses, in words; None when
    the source does not establish it."""
    used = _used_as_object(facts, load)
    if used is not None:
        return used
    return _saved_content(facts, load)


# -- how the loaded value is used ----------------------------------------------------------------------


def _result_binding(facts: Facts, load: cst.Call) -> Binding | None:
    """The binding `x = torch.load(...)` makes (a plain name target)."""
    for h in facts.holders(load):
        if isinstance(h, cst.Assign) and len(h.targets) == 1 and isinstance(h.targets[0].target, cst.Name):
            b = facts.lookup(h.targets[0].target.value, h)
            if b is not None and b.value is load:
                return b
    return None


def _uses(facts: Facts, load: cst.Call) -> list[cst.Call]:
    """The calls made on the loaded value: `x(...)`, `x.m(...)` of the name bound to it, `torch.load(p).m(...)`."""
    b = _result_binding(facts, load)
    out = []
    for call in facts.index.get("Call", ()):
        f = call.func
        recv = f.value if isinstance(f, cst.Attribute) else f
        if recv is load:
            out.append(call)
        elif b is not None and isinstance(recv, cst.Name):
            found = facts.lookup(recv.value, call)
            if found is not None and found.value is load:
                out.append(call)
    return out


def _used_as_object(facts: Facts, load: cst.Call) -> str | None:
    for call in _uses(facts, load):
        f = call.func
        if isinstance(f, cst.Attribute) and f.attr.value not in WEIGHTS_ONLY_ATTRIBUTES:
            return f"an object (used with `.{f.attr.value}()`)"
        if isinstance(f, cst.Name) or f is load:
            return "an object (called)"
    return None


# -- what the file saves ----------------------------------------------------------------------------


def _read_keys(facts: Facts, load: cst.Call) -> set[str]:
    """The string keys the loaded value is read with: `x["key"]`, `x.get("key")`, in the function it is loaded in."""
    b = _result_binding(facts, load)
    if b is None:
        return set()
    w = facts.where.get(load)
    scope: cst.CSTNode = w.function if w is not None and w.function is not None else facts.module
    name = b.target.value if isinstance(b.target, cst.Name) else ""
    keys = set()
    for sub in iter_nodes(scope, (cst.Subscript,)):
        if isinstance(sub.value, cst.Name) and sub.value.value == name and len(sub.slice) == 1:
            s = sub.slice[0].slice
            key = literal(s.value) if isinstance(s, cst.Index) else None
            if isinstance(key, str):
                keys.add(key)
    for call in facts.method_calls("get"):
        f = call.func
        if isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.value.value == name:
            found = facts.lookup(name, call)
            key = literal(call.args[0].value) if call.args else None
            if found is not None and found.value is load and isinstance(key, str):
                keys.add(key)
    return keys


def _same_path(facts: Facts, a: cst.BaseExpression | None, at_a: cst.CSTNode, b: cst.BaseExpression | None,
               at_b: cst.CSTNode) -> bool:
    if a is None or b is None:
        return False
    sa, sb = string_of(facts, a, at_a), string_of(facts, b, at_b)
    if sa is not None and sb is not None:
        return sa == sb
    if isinstance(a, cst.Name) and isinstance(b, cst.Name) and a.value == b.value:
        ba, bb = facts.lookup(a.value, at_a), facts.lookup(b.value, at_b)
        return ba is not None and ba is bb and ba.value is not None and not _is_param(facts, ba, at_a)
    return False


def _is_param(facts: Facts, b: Binding, at: cst.CSTNode) -> bool:
    w = facts.where.get(at)
    return w is not None and any(isinstance(fn, cst.FunctionDef) and is_parameter(fn, b) for fn in w.blocks)


def _saved_content(facts: Facts, load: cst.Call) -> str | None:
    path = argument(load, "f", 0)
    keys = _read_keys(facts, load)
    for save in facts.index.get("Call", ()):
        if facts.callee(save) != "torch.save":
            continue
        obj = argument(save, "obj", 0)
        if obj is None:
            continue
        saved = _dict_of(facts, obj, save)
        same = _same_path(facts, argument(save, "f", 1), save, path, load)
        if not same and saved is not None and len(keys) >= 2 and keys <= set(saved):
            same = True
        if not same:
            continue
        if saved is not None:
            for key, (value, at) in saved.items():
                what = _refused(facts, value, at, 0)
                if what is not None:
                    return f"{what} under `{key!r}`"
            continue
        what = _refused(facts, obj, save, 0)
        if what is not None:
            return what
    return None


def _dict_of(facts: Facts, expr: cst.BaseExpression, at: cst.CSTNode) -> dict[str, tuple[cst.BaseExpression, cst.CSTNode]] | None:
    """The entries of a dict literal with string keys that ``expr`` is (directly or through a name)."""
    if isinstance(expr, cst.Name):
        b = facts.lookup(expr.value, at)
        if b is None or not isinstance(b.value, cst.Dict):
            return None
        expr, at = b.value, (b.value if b.value in facts.where else at)
    if not isinstance(expr, cst.Dict):
        return None
    out = {}
    for el in expr.elements:
        if not isinstance(el, cst.DictElement):
            return None
        key = literal(el.key)
        if not isinstance(key, str):
            return None
        out[key] = (el.value, at)
    return out


def _refused(facts: Facts, expr: cst.BaseExpression, at: cst.CSTNode, depth: int) -> str | None:
    """What ``expr`` holds that the weights-only unpickler refuses: "a whole `nn.Module`", "numpy values", "an
    argparse namespace"; None when it may be loadable or the source does not say."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(expr, cst.Call):
        return _refused_call(facts, expr, at, depth)
    if isinstance(expr, cst.Name):
        b = facts.lookup(expr.value, at)
        if b is None or b.value is None or not isinstance(b.value, cst.BaseExpression) or _is_param(facts, b, at):
            return None
        value = b.value
        return _refused(facts, value, value if value in facts.where else at, depth + 1)
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
        return _refused_self(facts, expr.attr.value, at, depth)
    if isinstance(expr, (cst.List, cst.Tuple)):
        for el in expr.elements:
            what = _refused(facts, el.value, at, depth + 1)
            if what is not None:
                return what
    return None


def _refused_call(facts: Facts, call: cst.Call, at: cst.CSTNode, depth: int) -> str | None:
    f = call.func
    if isinstance(f, cst.Attribute) and f.attr.value in _PLAIN_METHODS:
        return None
    if isinstance(f, cst.Name) and f.value in _PLAIN_BUILTINS and facts.lookup(f.value, call) is None:
        return None
    q = facts.callee(call) or ""
    if q.startswith("numpy.") and q.rsplit(".", 1)[-1][:1].islower():
        return "numpy values"
    if isinstance(f, cst.Attribute) and f.attr.value == "parse_args":
        return "an argparse namespace"
    obj = program(facts).of(call, call if call in facts.where else at)
    if isinstance(obj, Module):
        return "a whole `nn.Module`"
    target = call_graph(facts).resolve(call) if call in facts.where else None
    if target is not None:
        rets = [r for r in facts.index.get("Return", ()) if (w := facts.where.get(r)) is not None and w.function is target]
        found = {(_refused(facts, r.value, r, depth + 1) if r.value is not None else None) for r in rets}
        if len(found) == 1:
            return found.pop()
    return None


def _refused_self(facts: Facts, attr: str, at: cst.CSTNode, depth: int) -> str | None:
    """`self.<attr>`: what every assignment in the class gives it; for a list, what is appended to it too."""
    w = facts.where.get(at)
    fn = w.function if w is not None else None
    graph = call_graph(facts)
    cls = graph.class_of(fn) if isinstance(fn, cst.FunctionDef) else None
    if cls is None:
        return None
    values = []
    for a in facts.index.get("Assign", ()):
        if cls in facts.where[a].blocks and any(
                isinstance(t.target, cst.Attribute) and isinstance(t.target.value, cst.Name)
                and t.target.value.value == "self" and t.target.attr.value == attr for t in a.targets):
            values.append(a)
    if not values:
        return None
    if any(isinstance(a.value, cst.List) for a in values):  # a list, filled by `append`
        for call in facts.method_calls("append"):
            f = call.func
            if (isinstance(f, cst.Attribute) and isinstance(f.value, cst.Attribute) and isinstance(f.value.value, cst.Name)
                    and f.value.value.value == "self" and f.value.attr.value == attr and cls in facts.where[call].blocks
                    and len(call.args) == 1):
                what = _refused(facts, call.args[0].value, call, depth + 1)
                if what is not None:
                    return what
        return None
    found = {_refused(facts, a.value, a, depth + 1) for a in values}
    return found.pop() if len(found) == 1 else None
