"""Built-in example sets: labelled sentences written for the app.

Each set shows one ambiguous word in a few senses or grammatical roles, with
balanced labels, so a class can watch the token vectors of one word type fall
apart by sense (Peters et al. 2018, ELMo; Devlin et al. 2019, BERT).

    EXAMPLE_SETS["苹果"] == {"word": "苹果", "origin": "ctxlab", "title_zh": ..., "title_en": ...,
                             "sentences": [("苹果真好吃，又甜又脆。", "水果"), ...]}

"origin": who wrote the sentences ("ctxlab": for this project; message `examples.origin.ctxlab`). `sets_for`
and `default_set` give these sets for language "zh" and the English ones (examples_en.py) for "en".

The word's first occurrence in every sentence is the one the label describes
(the app and `Encoder.word_vectors` use the first occurrence).

`parse_labelled_lines` reads the "sentence | label" format of the app's text box; `check_inputs` cleans what a
user typed and says what it changed as `Note`s: message ids (strings/<lang>/inputs.toml) and their values.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .examples_en import DEFAULT_SET_EN, EXAMPLE_SETS_EN

DEFAULT_SET = "苹果"

EXAMPLE_SETS: dict[str, dict] = {
    "苹果": {
        "word": "苹果", "origin": "ctxlab",
        "title_zh": "苹果：水果 / 品牌",
        "title_en": "苹果 (píngguǒ): the fruit / the brand Apple",
        "sentences": [
            ("苹果真好吃，又甜又脆。", "水果"),
            ("妈妈去市场买了一袋红富士苹果。", "水果"),
            ("秋天到了，果园里的苹果都熟了。", "水果"),
            ("每天吃一个苹果，对身体有好处。", "水果"),
            ("他把苹果削了皮，切成小块给孩子吃。", "水果"),
            ("这批新疆苹果个头大，水分也足。", "水果"),
            ("奶奶用苹果做了一锅香甜的果酱。", "水果"),
            ("苹果手机很好用，就是价格有点贵。", "品牌"),
            ("苹果公司今天发布了新款笔记本电脑。", "品牌"),
            ("我的苹果电脑系统又要更新了。", "品牌"),
            ("这家店是苹果的授权经销商，可以保修。", "品牌"),
            ("苹果的股价在发布会后上涨了三个百分点。", "品牌"),
            ("他用苹果手表记录每天跑步的距离。", "品牌"),
            ("很多开发者为苹果的应用商店编写软件。", "品牌"),
        ],
    },
    "活动": {
        "word": "活动", "origin": "ctxlab",
        "title_zh": "活动：名词 / 动词",
        "title_en": "活动 (huódòng): noun 'event' / verb 'to move about'",
        "sentences": [
            ("学校下周举办一次植树活动。", "名词"),
            ("这次促销活动吸引了很多顾客。", "名词"),
            ("社区的文艺活动丰富了居民的业余生活。", "名词"),
            ("他积极参加各种志愿者活动。", "名词"),
            ("活动结束后，大家一起合影留念。", "名词"),
            ("这项活动的经费由企业赞助。", "名词"),
            ("坐久了要站起来活动一下。", "动词"),
            ("老人每天早上去公园活动筋骨。", "动词"),
            ("他的手指受伤了，暂时不能活动。", "动词"),
            ("这几个人经常在边境一带活动。", "动词"),
            ("跑步前先活动一下手腕和脚踝。", "动词"),
            ("下课了，同学们都到操场上去活动。", "动词"),
        ],
    },
    "运动": {
        "word": "运动", "origin": "ctxlab",
        "title_zh": "运动：体育 / 社会运动 / 物理运动",
        "title_en": "运动 (yùndòng): sport / social movement / physical motion",
        "sentences": [
            ("他每天下午都去操场运动一个小时。", "体育"),
            ("游泳是一项适合老年人的运动。", "体育"),
            ("适量运动可以增强体质。", "体育"),
            ("足球是世界上最受欢迎的运动之一。", "体育"),
            ("饭后不宜马上做剧烈运动。", "体育"),
            ("五四运动是中国现代史上的重要事件。", "社会运动"),
            ("这场爱国卫生运动在全国迅速展开。", "社会运动"),
            ("他年轻时参加过学生运动。", "社会运动"),
            ("工人运动推动了劳动法的制定。", "社会运动"),
            ("一场轰轰烈烈的植树造林运动在山区开展起来。", "社会运动"),
            ("地球绕着太阳不停地运动。", "物理运动"),
            ("物体的运动速度越快，动能就越大。", "物理运动"),
            ("分子在永不停息地做无规则运动。", "物理运动"),
            ("这颗卫星沿着椭圆轨道运动。", "物理运动"),
            ("牛顿定律描述了物体运动的规律。", "物理运动"),
        ],
    },
    "打": {
        "word": "打", "origin": "ctxlab",
        "title_zh": "打：打电话 / 打球 / 打人",
        "title_en": "打 (dǎ): make a call / play a ball game / hit",
        "sentences": [
            ("到家以后记得给我打个电话。", "打电话"),
            ("他拿起手机给客户打电话。", "打电话"),
            ("昨天晚上妈妈打电话来问我什么时候回家。", "打电话"),
            ("我打了三次电话，他都没有接。", "打电话"),
            ("周末我们一起去体育馆打篮球吧。", "打球"),
            ("他从小就喜欢打乒乓球。", "打球"),
            ("几个孩子在院子里打羽毛球。", "打球"),
            ("下班后同事们经常一起打网球。", "打球"),
            ("不管多生气，打人都是不对的。", "打人"),
            ("那个醉汉在街上打人，被警察带走了。", "打人"),
            ("他小时候因为调皮没少挨父亲打。", "打人"),
            ("他一拳打在对方的脸上。", "打人"),
        ],
    },
    "意思": {
        "word": "意思", "origin": "ctxlab",
        "title_zh": "意思：含义 / 有趣 / 心意",
        "title_en": "意思 (yìsi): meaning / interest (有意思) / a token of goodwill",
        "sentences": [
            ("这个词是什么意思？", "含义"),
            ("老师把这句古诗的意思讲得很清楚。", "含义"),
            ("我没听懂你的意思，能再说一遍吗？", "含义"),
            ("字典里“行”这个字有好几个意思。", "含义"),
            ("这部电影挺有意思的，值得一看。", "有趣"),
            ("他讲的故事一点意思都没有。", "有趣"),
            ("跟他聊天特别有意思。", "有趣"),
            ("天天做同样的事情，真没意思。", "有趣"),
            ("这是我的一点小意思，请您收下。", "心意"),
            ("人家帮了这么大的忙，我们总得意思一下。", "心意"),
            ("礼物不贵，就是个意思。", "心意"),
            ("过年给孩子包个红包，意思意思就行。", "心意"),
        ],
    },
    "杜鹃": {
        "word": "杜鹃", "origin": "ctxlab",
        "title_zh": "杜鹃：鸟 / 花",
        "title_en": "杜鹃 (dùjuān): the cuckoo / the azalea",
        "sentences": [
            ("春天的山林里传来杜鹃的叫声。", "鸟"),
            ("杜鹃自己不筑巢，把蛋下在别的鸟的窝里。", "鸟"),
            ("一只杜鹃落在树枝上，不停地啼叫。", "鸟"),
            ("古诗里常用杜鹃啼血来形容悲伤。", "鸟"),
            ("观鸟爱好者在湿地拍到了一只杜鹃。", "鸟"),
            ("杜鹃的雏鸟会把养父母的蛋推出巢外。", "鸟"),
            ("四月的山坡上开满了红色的杜鹃。", "花"),
            ("她在阳台上种了几盆杜鹃，花开得正艳。", "花"),
            ("杜鹃喜欢酸性土壤，浇水要见干见湿。", "花"),
            ("井冈山的杜鹃漫山遍野，像一片火海。", "花"),
            ("这盆杜鹃该换个大一点的花盆了。", "花"),
            ("公园里的杜鹃、月季和牡丹都开了。", "花"),
        ],
    },
    "东西": {
        "word": "东西", "origin": "ctxlab",
        "title_zh": "东西：方向 / 物品",
        "title_en": "东西: dōngxī 'east and west' / dōngxi 'thing'",
        "sentences": [
            ("这条街东西走向，全长两公里。", "方向"),
            ("这座城市东西长约五十公里。", "方向"),
            ("这座岛东西宽三公里，南北长八公里。", "方向"),
            ("新修的高速公路贯通东西，缩短了两地的距离。", "方向"),
            ("房子坐北朝南，东西两侧各有一间厢房。", "方向"),
            ("中国地势西高东低，东西差异很大。", "方向"),
            ("我去超市买点东西。", "物品"),
            ("他把东西收拾好就出门了。", "物品"),
            ("这家店的东西又便宜又好。", "物品"),
            ("你的东西忘在我车上了。", "物品"),
            ("小孩子不要乱吃东西。", "物品"),
            ("搬家的时候扔掉了很多旧东西。", "物品"),
        ],
    },
    "还": {
        "word": "还", "origin": "ctxlab",
        "title_zh": "还：hái 副词 / huán 动词",
        "title_en": "还: hái 'still, also' (adverb) / huán 'to return' (verb)",
        "sentences": [
            ("他还在办公室加班。", "hái 副词"),
            ("外面还下着雨，带把伞吧。", "hái 副词"),
            ("这道题我还没想明白。", "hái 副词"),
            ("我们还要再等十分钟。", "hái 副词"),
            ("这家饭馆的菜还不错。", "hái 副词"),
            ("她不仅会唱歌，还会弹钢琴。", "hái 副词"),
            ("借的书要按时还给图书馆。", "huán 动词"),
            ("他上个月借的钱终于还清了。", "huán 动词"),
            ("请把钥匙还给我。", "huán 动词"),
            ("银行贷款每个月都要按时还。", "huán 动词"),
            ("用完的工具要及时还回原处。", "huán 动词"),
            ("他把捡到的钱包还给了失主。", "huán 动词"),
        ],
    },
    "地": {
        "word": "地", "origin": "ctxlab",
        "title_zh": "地：de 助词 / dì 名词",
        "title_en": "地: de (adverbial particle) / dì 'ground, field' (noun)",
        "sentences": [
            ("他慢慢地走进了教室。", "de 助词"),
            ("孩子们高兴地跳了起来。", "de 助词"),
            ("她认真地检查了每一道题。", "de 助词"),
            ("雨不停地下着。", "de 助词"),
            ("大家热烈地讨论着这个问题。", "de 助词"),
            ("他轻轻地关上了门。", "de 助词"),
            ("农民在地里种玉米。", "dì 名词"),
            ("书掉在地上了。", "dì 名词"),
            ("这块地今年收成很好。", "dì 名词"),
            ("他家承包了二十亩地。", "dì 名词"),
            ("下过雨以后，地很滑，走路要小心。", "dì 名词"),
            ("他们天不亮就下地干活了。", "dì 名词"),
        ],
    },
    "发展": {
        "word": "发展", "origin": "ctxlab",
        "title_zh": "发展：名词 / 动词",
        "title_en": "发展 (fāzhǎn): noun 'development' / verb 'to develop'",
        "sentences": [
            ("经济的发展离不开科技进步。", "名词"),
            ("这座城市近年来的发展有目共睹。", "名词"),
            ("教育是国家发展的基础。", "名词"),
            ("孩子的全面发展需要家庭和学校共同努力。", "名词"),
            ("可持续发展是我们共同的目标。", "名词"),
            ("改革开放以来，农村的发展速度很快。", "名词"),
            ("我们要大力发展旅游业。", "动词"),
            ("这家公司从一个小作坊发展成了大集团。", "动词"),
            ("两国决定进一步发展友好关系。", "动词"),
            ("病情发展得很快，需要马上手术。", "动词"),
            ("他想去大城市发展。", "动词"),
            ("当地政府积极发展特色农业。", "动词"),
        ],
    },
    "花": {
        "word": "花", "origin": "ctxlab",
        "title_zh": "花：花朵（名词）/ 花费（动词）",
        "title_en": "花 (huā): flower (noun) / to spend (verb)",
        "sentences": [
            ("春天到了，公园里的花都开了。", "花朵"),
            ("她送给妈妈一束花。", "花朵"),
            ("这盆花需要每天浇水。", "花朵"),
            ("院子里种满了各种颜色的花。", "花朵"),
            ("蜜蜂围着花飞来飞去。", "花朵"),
            ("他这个月花了不少钱。", "花费"),
            ("做完这个项目花了整整三个月。", "花费"),
            ("别把钱都花在游戏上。", "花费"),
            ("我花了一个小时才找到停车位。", "花费"),
            ("买这套房子几乎花光了他们的积蓄。", "花费"),
        ],
    },
    "小米": {
        "word": "小米", "origin": "ctxlab",
        "title_zh": "小米：谷物 / 品牌",
        "title_en": "小米 (xiǎomǐ): millet / the brand Xiaomi",
        "sentences": [
            ("早上喝一碗小米粥，胃里很舒服。", "谷物"),
            ("山西的小米颗粒饱满，熬粥特别香。", "谷物"),
            ("奶奶在院子里晒小米。", "谷物"),
            ("这块地今年种的是小米和高粱。", "谷物"),
            ("坐月子的时候，她每天都喝小米粥。", "谷物"),
            ("他新买了一部小米手机。", "品牌"),
            ("小米公司发布了新款电动汽车。", "品牌"),
            ("我家的扫地机器人是小米的。", "品牌"),
            ("小米的智能家居产品性价比很高。", "品牌"),
            ("雷军是小米的创始人。", "品牌"),
        ],
    },
}

_BY_LANGUAGE = {"zh": (DEFAULT_SET, EXAMPLE_SETS), "en": (DEFAULT_SET_EN, EXAMPLE_SETS_EN)}  # of the sentences


def sets_for(language: str) -> dict[str, dict]:
    """The example sets whose sentences are in `language` ("zh" or "en"), default set first."""
    if language not in _BY_LANGUAGE:
        raise ValueError(f"example sets exist for {', '.join(_BY_LANGUAGE)}, not {language!r}")
    return _BY_LANGUAGE[language][1]


def default_set(language: str) -> str:
    """The name of the set a page opens on for `language`."""
    sets_for(language)  # an unknown language raises there
    return _BY_LANGUAGE[language][0]


_SEPARATORS = ("|", "｜")


def parse_labelled_lines(text: str) -> list[tuple[str, str | None]]:
    """Parse "sentence | label" lines; the label is optional. Blank lines are skipped.

    The last "|" (ASCII or full-width) splits sentence from label, so a sentence
    may itself contain "|". An empty label gives None.
    """
    out: list[tuple[str, str | None]] = []
    for line in (text or "").splitlines():
        line = line.strip()
        if not line:
            continue
        cut = max(line.rfind(s) for s in _SEPARATORS)
        if cut < 0:
            out.append((line, None))
            continue
        sentence, label = line[:cut].strip(), line[cut + 1:].strip()
        out.append((sentence, label or None))
    return out


def format_labelled_lines(sentences) -> str:
    """The inverse of parse_labelled_lines: one "sentence | label" line each (no label, no bar)."""
    return "\n".join(f"{s} | {lab}" if lab else s for s, lab in sentences)


def example_text(name: str, language: str = "zh") -> str:
    """The text-box form of an example set."""
    return format_labelled_lines(sets_for(language)[name]["sentences"])


# -- checking what a user typed ----------------------------------------------------------------
MAX_INPUT_CHARS = 5000  # a longer paste is cut here
MAX_SENTENCES = 40  # more sentences make unreadable maps
MAX_SENTENCE_CHARS = 120  # a longer sentence is cut to a window around the word (BERT takes 126 characters)
MAX_WORD_CHARS = 12


@dataclass(frozen=True)
class Numbers:
    """Sentence numbers for a message; the format spec is the separator, so the catalogue writes `{nums:, }`
    in English and `{nums:、}` in Chinese. `more` adds "…" (the list was cut)."""

    items: tuple[int, ...]
    more: bool = False

    def __format__(self, sep: str) -> str:
        return (sep or ", ").join(map(str, self.items)) + ("…" if self.more else "")


@dataclass(frozen=True)
class Note:
    """A message about the user's input: `level` ("error" | "warning" | "info"), the catalogue id of its text
    (strings/<lang>/inputs.toml) and the values of its placeholders; render it with `msg(note.id, **note.values)`."""

    level: str
    id: str
    values: dict = field(default_factory=dict)


def window(sentence: str, start: int, end: int, size: int) -> str:
    half = max(0, (size - (end - start)) // 2)
    a = max(0, start - half)
    b = min(len(sentence), a + size)
    a = max(0, b - size)
    return sentence[a:b]


def check_inputs(word: str, text: str) -> tuple[str, list[tuple[str, str | None]], list[Note]]:
    """Clean a target word and "sentence | label" text: (word, kept pairs, notes).

    Never raises on bad input; an "error" note means nothing can be shown. Notes carry user text verbatim,
    so the caller must escape the rendered text before showing it as markdown.
    """
    from .tokens import find_all

    notes: list[Note] = []
    word = (word or "").strip()
    if not word:
        return word, [], [Note("error", "inputs.no_word")]
    if len(word) > MAX_WORD_CHARS or any(ch.isspace() for ch in word):
        return word, [], [Note("error", "inputs.bad_word", {"max": MAX_WORD_CHARS, "word": word[:20]})]
    text = text or ""
    if len(text) > MAX_INPUT_CHARS:
        notes.append(Note("warning", "inputs.input_cut", {"n": len(text), "max": MAX_INPUT_CHARS}))
        text = text[:MAX_INPUT_CHARS]
    pairs = parse_labelled_lines(text)
    if not pairs:
        return word, [], notes + [Note("error", "inputs.no_sentence")]
    kept, missing, cut = [], [], []
    for i, (s, lab) in enumerate(pairs, 1):
        spans = find_all(s, word)
        if not spans:
            missing.append((i, s))
            continue
        if len(s) > MAX_SENTENCE_CHARS:
            s = window(s, spans[0][0], spans[0][1], MAX_SENTENCE_CHARS)
            cut.append(i)
        kept.append((s, lab))
    if missing:
        nums = Numbers(tuple(i for i, _ in missing[:10]), more=len(missing) > 10)
        notes.append(Note("warning", "inputs.skipped", {"nums": nums, "word": word, "first": missing[0][1][:30]}))
    if cut:
        notes.append(Note("info", "inputs.windowed", {"nums": Numbers(tuple(cut[:10])), "max": MAX_SENTENCE_CHARS}))
    first: dict[str, int] = {}
    repeats = []  # (first number, repeat number): kept (its point sits on the first one), but the teacher is told
    for i, (s, _) in enumerate(pairs, 1):
        if find_all(s, word):
            if s in first:
                repeats.append((first[s], i))
            first.setdefault(s, i)
    if repeats:
        notes.append(Note("info", "inputs.repeated", {"nums": Numbers(tuple(i for _, i in repeats[:10]), len(repeats) > 10),
                                                      "first": Numbers(tuple(dict.fromkeys(a for a, _ in repeats[:10])))}))
    if len(kept) > MAX_SENTENCES:
        notes.append(Note("warning", "inputs.too_many", {"n": len(kept), "max": MAX_SENTENCES}))
        kept = kept[:MAX_SENTENCES]
    if not kept:
        notes.append(Note("error", "inputs.no_match", {"word": word}))
    return word, kept, notes
