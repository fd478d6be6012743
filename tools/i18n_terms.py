"""One Chinese term per concept: the glossary's (notebooks/glossary.md).

TERMS maps an English term (a regular expression over the English prose,
outside code and maths) to the Chinese term the glossary gives and to the
variants a translator might reach for instead. An entry whose English uses the
term must use the glossary's Chinese term (``required``) when the English word
is unambiguous; no entry may use a forbidden variant. tests/course/
test_chinese.py checks that each required term is the glossary's, so the table
cannot drift from the glossary.
"""

import re
from dataclasses import dataclass

from tools.i18n_text import without_code_and_maths


@dataclass(frozen=True)
class Term:
    english: str  # the glossary's English column (its first name)
    pattern: str  # regex over the English prose (case-insensitive)
    chinese: str  # the glossary's Chinese term
    forbidden: tuple = ()  # regexes of the variants that must not appear
    required: bool = True  # False: the English word is also an ordinary word


TERMS = (
    Term("attention", r"\battention\b", "注意力", ("关注机制",), required=False),
    Term(
        "scaled dot-product attention",
        r"\bscaled dot[- ]product attention\b",
        "缩放点积注意力",
        ("比例点积注意力", "缩放点乘注意力", "点积缩放注意力", "尺度点积注意力"),
    ),
    Term("query", r"\bquer(y|ies)\b", "查询", ("询问", "问询", "查询向量q")),
    Term("key", r"\bkeys?\b", "键", ("钥匙", "密钥", "关键字"), required=False),
    Term("value", r"\bvalues?\b", "值", ("价值",), required=False),
    Term("score", r"\bscores?\b", "分数", ("评分", "得分"), required=False),
    Term("attention weight", r"\battention weights?\b", "注意力权重"),
    Term(
        "normalizer",
        r"\bnormali[sz]er\b",
        "归一化因子",
        ("归一化常数", "归一化系数", "规范化常数", "标准化常数"),
    ),
    Term("softmax", r"\bsoftmax\b", "softmax", ("软最大", "柔性最大")),
    Term("temperature", r"\btemperatures?\b", "温度"),
    Term("dot product", r"\bdot products?\b", "点积", ("点乘", "数量积")),
    Term("transpose", r"\btranspose\b", "转置", required=False),
    Term("tensor", r"\btensors?\b", "张量"),
    Term("numerical stability", r"\bnumerical(ly)? stab", "数值稳定"),
    Term("saturation", r"\bsaturat", "饱和"),
    Term("vanishing gradient", r"\bvanishing gradients?\b", "梯度消失", ("梯度弥散",)),
    Term("convergence", r"\bconverge", "收敛"),
    Term("mask", r"\bmask(s|ed|ing)?\b", "掩码", ("遮罩", "蒙版", "掩膜")),
    Term("padding mask", r"\bpadding masks?\b", "填充掩码", ("补零掩码", "填补掩码")),
    Term("causal mask", r"\bcausal masks?\b", "因果掩码", ("前瞻掩码", "未来掩码")),
    Term("self-attention", r"\bself-attention\b", "自注意力", ("自我注意力",)),
    Term("cross-attention", r"\bcross-attention\b", "交叉注意力", ("互注意力",)),
    Term(
        "multi-head attention",
        r"\bmulti-head(ed)? attention\b",
        "多头注意力",
        ("多首注意力", "多头关注"),
    ),
    Term("head", r"\bheads?\b", "头", ("注意力首",), required=False),
    Term("KV cache", r"\bKV[- ]cache", "KV 缓存", ("键值缓存", "KV缓存")),
    Term("feature map", r"\bfeature maps?\b", "特征映射", ("特征图",)),
    Term("linear attention", r"\blinear attention\b", "线性注意力"),
    Term("random features", r"\brandom features?\b", "随机特征"),
    Term("associative recall", r"\bassociative recall\b", "关联召回", ("联想回忆",)),
    Term("hybrid model", r"\bhybrid (model|architecture)s?\b", "混合架构"),
    Term(
        "sliding-window attention",
        r"\bsliding[- ]window attention\b",
        "滑动窗口注意力",
    ),
    Term("ring buffer", r"\bring buffers?\b", "环形缓冲区", ("循环缓冲区", "环状缓冲")),
    Term("receptive field", r"\breceptive fields?\b", "感受野", ("接受域", "感知域")),
    Term(
        "attention sink",
        r"\battention sinks?\b",
        "注意力汇聚点",
        ("注意力池", "注意力沉没", "注意力槽"),
    ),
    Term("sparse (top-k) attention", r"\bsparse attention\b", "稀疏注意力"),
    Term("batch", r"\bbatch(es)?\b", "批次", ("批量大小",), required=False),
    Term("sequence length", r"\bsequence lengths?\b", "序列长度"),
)


# a title or phrase quoted in Chinese (「把 Scaled Dot-Product Attention 展开写一遍」)
# is the seed's own words, not English prose to translate
QUOTED = re.compile(r"「[^」]*」")


def term_problems(msgid, msgstr):
    """The glossary terms a translation does not use: a list of sentences."""
    english = QUOTED.sub(" ", without_code_and_maths(msgid))
    chinese = without_code_and_maths(msgstr)
    problems = []
    for term in TERMS:
        for variant in term.forbidden:
            if re.search(variant, chinese):
                problems.append(
                    f"term: '{variant}' is not the glossary's term; "
                    f"{term.english} is {term.chinese}"
                )
        used = re.search(term.pattern, english, re.IGNORECASE)
        if term.required and used and term.chinese.lower() not in chinese.lower():
            problems.append(
                f"term: '{used[0]}' is translated {term.chinese} (glossary)"
            )
    return problems
