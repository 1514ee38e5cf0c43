"""Tests for runtime._uritemplate: RFC 6570 expansion, validation and matching."""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.features._uritemplate import (
    MAX_TEMPLATE_LENGTH,
    MAX_URI_LENGTH,
    UriTemplate,
    UriTemplateError,
    is_template,
)

# RFC 6570 §1.2 / §3.2 example variables.
RFC_VARS: dict[str, str | list[str] | None] = {
    "var": "value",
    "hello": "Hello World!",
    "path": "/foo/bar",
    "x": "1024",
    "y": "768",
    "empty": "",
    "undef": None,
    "list": ["red", "green", "blue"],
    "emptylist": [],
}

RFC_EXPANSIONS = [
    # Level 1 (§1.2, §3.2.2)
    ("{var}", "value"),
    ("{hello}", "Hello%20World%21"),
    # Level 2: reserved (§3.2.3) and fragment (§3.2.4)
    ("{+var}", "value"),
    ("{+hello}", "Hello%20World!"),
    ("{+path}/here", "/foo/bar/here"),
    ("here?ref={+path}", "here?ref=/foo/bar"),
    ("X{#var}", "X#value"),
    ("X{#hello}", "X#Hello%20World!"),
    # Level 3 (§1.2, §3.2.2-§3.2.9)
    ("map?{x,y}", "map?1024,768"),
    ("{x,hello,y}", "1024,Hello%20World%21,768"),
    ("{+x,hello,y}", "1024,Hello%20World!,768"),
    ("{+path,x}/here", "/foo/bar,1024/here"),
    ("{#x,hello,y}", "#1024,Hello%20World!,768"),
    ("{#path,x}/here", "#/foo/bar,1024/here"),
    ("X{.var}", "X.value"),
    ("X{.x,y}", "X.1024.768"),
    ("{/var}", "/value"),
    ("{/var,x}/here", "/value/1024/here"),
    ("{;x,y}", ";x=1024;y=768"),
    ("{;x,y,empty}", ";x=1024;y=768;empty"),
    ("{?x,y}", "?x=1024&y=768"),
    ("{?x,y,empty}", "?x=1024&y=768&empty="),
    ("?fixed=yes{&x}", "?fixed=yes&x=1024"),
    ("{&x,y,empty}", "&x=1024&y=768&empty="),
    # Empty and undefined values (§3.2.1)
    ("O{empty}X", "OX"),
    ("O{undef}X", "OX"),
    ("{x,empty}", "1024,"),
    ("{x,undef}", "1024"),
    ("{undef,y}", "768"),
    ("X{.empty}", "X."),
    ("X{.undef}", "X"),
    ("{/undef}", ""),
    ("{;undef}", ""),
    ("{?undef}", ""),
    ("{?x,undef}", "?x=1024"),
    ("{#undef}", ""),
    ("{?emptylist}", ""),
    # Level 4 modifiers (§2.4, §3.2)
    ("{var:3}", "val"),
    ("{var:30}", "value"),
    ("{+path:6}/here", "/foo/b/here"),
    ("{#path:6}/here", "#/foo/b/here"),
    ("{;hello:5}", ";hello=Hello"),
    ("{list}", "red,green,blue"),
    ("{list*}", "red,green,blue"),
    ("{/list}", "/red,green,blue"),
    ("{/list*}", "/red/green/blue"),
    ("X{.list*}", "X.red.green.blue"),
    ("{;list}", ";list=red,green,blue"),
    ("{;list*}", ";list=red;list=green;list=blue"),
    ("{?list}", "?list=red,green,blue"),
    ("{?list*}", "?list=red&list=green&list=blue"),
    ("{&list*}", "&list=red&list=green&list=blue"),
]


@pytest.mark.parametrize(("template", "expected"), RFC_EXPANSIONS)
def test_rfc_expansion(template: str, expected: str) -> None:
    assert UriTemplate(template).expand(RFC_VARS) == expected


def test_expand_encoding() -> None:
    t = UriTemplate("x://{a}/{+b}")
    assert t.expand({"a": "é/?", "b": "é/?%41%zz"}) == "x://%C3%A9%2F%3F/%C3%A9/?%41%25zz"
    assert UriTemplate("{+a:2}").expand({"a": "%41%42%43"}) == "%41%42"  # triplet = 1 char
    assert UriTemplate("{a:2}").expand({"a": "é日本"}) == "%C3%A9%E6%97%A5"
    assert UriTemplate("{;list*}").expand({"list": ["a", ""]}) == ";list=a;list"
    assert UriTemplate("{?list*}").expand({"list": ["a", ""]}) == "?list=a&list="


def test_expand_errors() -> None:
    with pytest.raises(ValueError, match="prefix"):
        UriTemplate("{list:3}").expand({"list": ["a"]})
    with pytest.raises(TypeError):
        UriTemplate("{x}").expand({"x": 3})  # type: ignore[dict-item]
    with pytest.raises(TypeError):
        UriTemplate("{x}").expand({"x": ["a", 3]})  # type: ignore[list-item]


@pytest.mark.parametrize(
    "template",
    [
        "{",
        "}",
        "a{b",
        "a}b",
        "{a{b}}",
        "{a}}",
        "{}",
        "x{}y",
        "{+}",
        "{?}",
        "{=a}",
        "{,a}",
        "{!a}",
        "{@a}",
        "{|a}",
        "{-a}",
        "{$a}",
        "{a b}",
        "{a-b}",
        "{a,}",
        "{,}",
        "{a,,b}",
        "{.a.}",
        "{a..b}",
        "{%zz}",
        "{a:0}",
        "{a:10000}",
        "{a:}",
        "{a*:3}",
        "{a**}",
        "{a}{a}",
        "{a,a}",
        "{a}/{?a}",
        "a b/{x}",
        "a\n{x}",
        "{" + ",".join(f"v{i}" for i in range(65)) + "}",
        "x" * (MAX_TEMPLATE_LENGTH + 1),
    ],
)
def test_invalid_templates(template: str) -> None:
    with pytest.raises(UriTemplateError):
        UriTemplate(template)


def test_error_messages() -> None:
    with pytest.raises(UriTemplateError, match="unknown operator"):
        UriTemplate("{-a}")
    with pytest.raises(UriTemplateError, match="reserved operator"):
        UriTemplate("{=a}")
    with pytest.raises(UriTemplateError, match="duplicate"):
        UriTemplate("{a}/{b}/{a}")
    assert issubclass(UriTemplateError, ValueError)


def test_valid_template_attributes() -> None:
    t = UriTemplate("x://{a}/{+b.c}{/d%20e*}{?f:3,g}")
    assert t.template == str(t) == "x://{a}/{+b.c}{/d%20e*}{?f:3,g}"
    assert t.variable_names == ("a", "b.c", "d%20e", "f", "g")
    assert UriTemplate("static://no/vars").variable_names == ()
    assert repr(t) == "UriTemplate('x://{a}/{+b.c}{/d%20e*}{?f:3,g}')"
    assert t == UriTemplate(t.template)
    assert t != UriTemplate("x://{a}")
    assert t != t.template
    assert len({t, UriTemplate(t.template)}) == 1
    assert UriTemplate("x" * MAX_TEMPLATE_LENGTH).match("x" * MAX_TEMPLATE_LENGTH) == {}


def test_is_template() -> None:
    assert is_template("file:///{path}")
    assert is_template("search://{?q,limit}")
    assert is_template("{}")  # invalid, but registration should then fail loudly
    assert not is_template("file:///etc/hosts")
    assert not is_template("weird://{unclosed")
    assert not is_template("")


MATCHES: list[tuple[str, str, dict[str, str] | None]] = [
    # simple
    ("users://{user_id}/profile", "users://42/profile", {"user_id": "42"}),
    ("users://{user_id}/profile", "users://a%20b/profile", {"user_id": "a b"}),
    (
        "users://{user_id}/profile",
        "users://a:b@c!$&'()*+,;=/profile",
        {"user_id": "a:b@c!$&'()*+,;="},
    ),
    ("users://{user_id}/profile", "users://a/b/profile", None),  # no slash in simple var
    ("users://{user_id}/profile", "users:///profile", None),  # non-empty
    ("users://{user_id}/profile", "users://a?b/profile", None),
    ("users://{user_id}/profile", "users://a#b/profile", None),
    ("users://{user_id}/profile", "users://42/profile/extra", None),  # trailing garbage
    ("users://{user_id}/profile", "users://42/profilex", None),
    ("users://{user_id}/profile", "xusers://42/profile", None),
    ("users://{user_id}/profile", "USERS://42/profile", None),  # literal compared exactly
    ("users://{user_id}/profile", "users://a b/profile", None),  # raw space is never valid
    ("users://{user_id}", "users://caf%C3%A9", {"user_id": "café"}),
    ("users://{user_id}", "users://café", {"user_id": "café"}),
    ("users://{user_id}", "users://%FF", None),  # not UTF-8
    ("users://{user_id}", "users://100%", {"user_id": "100%"}),  # stray % kept
    # multi-segment
    (
        "repo://{owner}/{name}/issues/{n}",
        "repo://o/r/issues/7",
        {"owner": "o", "name": "r", "n": "7"},
    ),
    ("repo://{owner}/{name}/issues/{n}", "repo://o/r/issues/", None),
    ("repo://{owner}/{name}/issues/{n}", "repo://o/r/x/issues/7", None),
    # multi-variable simple expression
    ("map://{x,y}", "map://1024,768", {"x": "1024", "y": "768"}),
    ("map://{x,y}", "map://1024", {"x": "1024"}),
    ("map://{x,y}", "map://1024,", {"x": "1024", "y": ""}),
    ("map://{x,y}", "map://a%2Cb,c", {"x": "a,b", "y": "c"}),
    ("map://{x,y}", "map://1,2,3", None),
    ("map://{x}", "map://1,2,3", {"x": "1,2,3"}),  # single var may contain commas
    # reserved
    ("file:///{+path}", "file:///a/b/c.txt", {"path": "a/b/c.txt"}),
    ("file:///{+path}", "file:///a%20b/c", {"path": "a b/c"}),
    ("file:///{+path}", "file:///", None),
    ("file:///{+path}", "file:///a?b#c", {"path": "a?b#c"}),
    ("file:///{+path}{?v}", "file:///a/b?v=2", {"path": "a/b", "v": "2"}),
    ("file:///{+path}/meta", "file:///a/b/meta", {"path": "a/b"}),
    ("file:///{+path}/meta", "file:///a/b", None),
    ("x://{+a,b}", "x://p/q,r", {"a": "p/q", "b": "r"}),
    ("static/{+dir}/x/{name}", "static/a/b/x/c", {"dir": "a/b", "name": "c"}),
    # fragment
    ("doc://{+base}{#section}", "doc://a/b#intro", {"base": "a/b", "section": "intro"}),
    ("doc://{+base}{#section}", "doc://a/b", {"base": "a/b"}),
    ("doc://x{#a,b}", "doc://x#1/2,3", {"a": "1/2", "b": "3"}),
    ("doc://x{#a}", "doc://xintro", None),  # '#' form requires the '#'
    # path segments
    ("repo://r{/a,b}", "repo://r/x/y", {"a": "x", "b": "y"}),
    ("repo://r{/a,b}", "repo://r/x", {"a": "x"}),
    ("repo://r{/a,b}", "repo://r", {}),
    ("repo://r{/a,b}", "repo://r/x/y/z", None),
    ("repo://r{/a}/end", "repo://r/x/end", {"a": "x"}),
    # label
    ("dns://www{.domain,tld}", "dns://www.example.com", {"domain": "example", "tld": "com"}),
    ("dns://www{.domain,tld}", "dns://www", {}),
    ("file://{name}{.ext}", "file://a.b.c", {"name": "a.b", "ext": "c"}),
    ("file://{name}{.ext}", "file://readme", {"name": "readme"}),
    ("x://{/file}{.ext}", "x:///doc.txt", {"file": "doc", "ext": "txt"}),
    # path-style parameters
    ("m://p{;x,y}", "m://p;x=1;y=2", {"x": "1", "y": "2"}),
    ("m://p{;x,y}", "m://p;x;y=2", {"x": "", "y": "2"}),
    ("m://p{;x,y}", "m://p;y=2", {"y": "2"}),
    ("m://p{;x,y}", "m://p", {}),
    ("m://p{;x,y}", "m://p;y=2;x=1", None),  # template order
    ("m://p{;x,y}", "m://p;z=1", None),  # unknown parameter
    ("m://p{;x,xy}", "m://p;xy=1", {"xy": "1"}),
    ("m://p{;x}/rest", "m://p;x=%3B/rest", {"x": ";"}),
    # query
    ("search://{?q,limit}", "search://?q=cats&limit=10", {"q": "cats", "limit": "10"}),
    ("search://{?q,limit}", "search://?q=cats", {"q": "cats"}),
    ("search://{?q,limit}", "search://?limit=10", {"limit": "10"}),
    ("search://{?q,limit}", "search://", {}),
    ("search://{?q,limit}", "search://?q=", {"q": ""}),
    ("search://{?q,limit}", "search://?q=a+b%26c%3Dd", {"q": "a+b&c=d"}),  # + is not space
    ("search://{?q,limit}", "search://?q=a/b?c", {"q": "a/b?c"}),
    ("search://{?q,limit}", "search://?q=1&other=2", None),
    ("search://{?q,limit}", "search://?q=1&", None),
    ("search://{?q,limit}", "search://?", None),
    ("search://{?q,limit}", "search://?q=1#frag", None),
    ("search://{?q,limit}", "search://?limit=1&q=2", None),  # RFC expansion order
    ("search://{?q}{&page}", "search://?q=a&page=2", {"q": "a", "page": "2"}),
    ("search://s?fixed=1{&page}", "search://s?fixed=1&page=2", {"page": "2"}),
    ("search://s?fixed=1{&page}", "search://s?fixed=1", {}),
    ("x://{id}{?q}{#f}", "x://7?q=1#top", {"id": "7", "q": "1", "f": "top"}),
    # explode: raw, undecoded text
    ("x://r{/list*}", "x://r/a/b%20c", {"list": "a/b%20c"}),
    ("x://r{?list*}", "x://r?list=a&list=b", {"list": "list=a&list=b"}),
    ("x://r{;list*}", "x://r;list=a;list=b", {"list": "list=a;list=b"}),
    ("x://r/{list*}", "x://r/a,b", {"list": "a,b"}),
    # prefix modifiers do not limit the match
    ("x://{v:3}", "x://value", {"v": "value"}),
    # adjacent variables and literals between variables
    ("x://{a}-{b}.json", "x://p-q-r.json", {"a": "p", "b": "q-r"}),
    ("x://{a}{b}", "x://pqr", {"a": "p", "b": "qr"}),
    ("x://{a}{b}", "x://p", None),
    # commitments that keep matching linear
    ("file:///{+path}{?v}", "file:///a?b?v=1", None),  # path stops at the first '?'
    ("doc://{+base}{#s}", "doc://a/b#c#d", {"base": "a/b", "s": "c#d"}),
    ("x://{a}{.b*}", "x://p.q.r", {"a": "p", "b": "q.r"}),
    ("x://{a,b*,c}", "x://1,2,3", {"a": "1", "b": "2", "c": "3"}),  # mid-expression: 1 item
    ("x://{+a}/x/{+b}", "x://p/x/q/x/r", {"a": "p", "b": "q/x/r"}),
    # no variables
    ("x://static", "x://static", {}),
    ("x://static", "x://static/", None),
    # odd varnames are result keys as written
    ("x://{a.b}/{c%20d}", "x://1/2", {"a.b": "1", "c%20d": "2"}),
]


@pytest.mark.parametrize(("template", "uri", "expected"), MATCHES)
def test_match(template: str, uri: str, expected: dict[str, str] | None) -> None:
    assert UriTemplate(template).match(uri) == expected


def test_match_uri_length_cap() -> None:
    t = UriTemplate("x://{+a}")
    assert t.match("x://" + "a" * (MAX_URI_LENGTH - 4)) == {"a": "a" * (MAX_URI_LENGTH - 4)}
    assert t.match("x://" + "a" * (MAX_URI_LENGTH - 3)) is None


ADVERSARIAL_TEMPLATES = [
    "users://{user_id}/profile",
    "x://{a}-{b}-{c}.json",
    "x://{a}{b}{c}",
    "x://{+a}/x/{+b}/y/{+c}/z",
    "x://{a,b,c}",
    "x://{name}{.ext}{.z}",
    "x://{+a}{+b}{#c}",
    "x://{/a,b,c}{;d,e,f}{?g,h,i}{&j}",
    # formerly super-linear, found by fuzzing
    "x://{a*,b*,c*};{d,e*},{#f}",
    "x://{+a,b}{#c*,d};",
    "x://{a,b,c}{.d,e*,f}-{&g}#",
    "x://{a*,b*,c}/{?d}{/e,f,g}#{h,i}.",
    "x://{a}{.x}{b}",
    "file:///{+path}{?v}",
    "doc://{+base}{#section}",
]


@pytest.mark.parametrize("template", ADVERSARIAL_TEMPLATES)
def test_match_adversarial_input_terminates(template: str) -> None:
    # Must not hang: negated classes, lazy quantifiers and atomic groups keep this linear.
    t = UriTemplate(template)
    assert t.match("x://" + "a-a.a/a,a;a=&a?" * 7000) is None  # ~100 KB, over the cap
    for unit in ("a-", "a", "a/x/", "a.", "a,", "a;", ";d=", "a=&", "a?", "a#", "%"):
        body = unit * ((MAX_URI_LENGTH - 20) // len(unit))
        t.match("x://" + body + "\n")
        t.match("x://" + body)


# Values that survive expansion then matching unchanged. Unreserved "." is left out because
# it is also the label separator and a literal in some templates.
SAFE = string.ascii_letters + string.digits + "-_~ !$&'()*+,;=:@/?#%[]é日"
RESERVED_SAFE = string.ascii_letters + string.digits + "-_.~/:@!$'()*= é"
simple_values = st.text(alphabet=SAFE.replace("/", ""), min_size=1, max_size=20)
reserved_values = st.text(alphabet=RESERVED_SAFE, min_size=1, max_size=20)
optional = st.none() | simple_values

ROUNDTRIP: list[tuple[str, dict[str, st.SearchStrategy[str | None]]]] = [
    ("users://{user_id}/profile", {"user_id": simple_values}),
    ("db://{schema}/{table}{.format}", {"schema": simple_values, "table": simple_values}),
    ("db://x/{table}{.format}", {"table": simple_values, "format": simple_values}),
    ("file:///{+path}", {"path": reserved_values}),
    ("search://items{?q,limit}", {"q": optional, "limit": optional}),
    ("map://{x,y}/m{;a,b,c}", {"x": simple_values, "y": simple_values, "b": optional}),
    ("map://p{;a,b,c}", {"a": optional, "b": optional, "c": optional}),
    ("rest://{x}/items{?page}{&sort,dir}", {"x": simple_values, "sort": optional}),
    ("doc://{+base}{#section}", {"base": reserved_values, "section": reserved_values}),
    ("repo://{owner}{/path,file}", {"owner": simple_values, "path": simple_values}),
    ("label://www{.a,b}", {"a": simple_values, "b": simple_values}),
    ("x://{a}-{b}.json", {"a": st.text(alphabet="abc%é ", min_size=1), "b": simple_values}),
]


@st.composite
def template_and_values(draw: st.DrawFn) -> tuple[UriTemplate, dict[str, str]]:
    template, strategies = draw(st.sampled_from(ROUNDTRIP))
    drawn = {name: draw(strategy) for name, strategy in strategies.items()}
    return UriTemplate(template), {k: v for k, v in drawn.items() if v is not None}


@settings(max_examples=400, deadline=None)
@given(template_and_values())
def test_match_inverts_expand(case: tuple[UriTemplate, dict[str, str]]) -> None:
    template, values = case
    assert template.match(template.expand(values)) == values
