#!/usr/bin/env python3
"""Generates `secret_corpus_rules.txt`: a FAKE credential for every rule of gitleaks'
`config/gitleaks.toml` and every trufflehog detector whose regex can be read, each generated from
the rule's own regex with a fixed seed (no test string of either project is copied), in the
contexts real code uses, plus look-alikes that must stay.

    python3 gen_secret_corpus_rules.py GITLEAKS_TOML TRUFFLEHOG_DETECTORS_DIR > secret_corpus_rules.txt

GITLEAKS_TOML is `config/gitleaks.toml`; TRUFFLEHOG_DETECTORS_DIR is `pkg/detectors` of a checkout
(read only: nothing of either project is stored here).
"""

import math
import os
import random
import re
import sys
import tomllib

try:
    import re._parser as sre_parse  # Python >= 3.11
    from re._constants import MAXREPEAT
except ImportError:  # pragma: no cover
    import sre_parse
    from sre_constants import MAXREPEAT

SEED = int(os.environ.get("SEED", "41"))
PRINTABLE = [chr(c) for c in range(33, 127)]


def go_to_py(rx):
    """Go's RE2 syntax to Python's: mid-expression flags dropped (sampling ignores case),
    `\\z` to `\\Z`, POSIX classes spelled out."""
    rx = rx.replace(r"\z", r"\Z")
    rx = rx.replace("[[:alnum:]]", "[A-Za-z0-9]").replace("[:alnum:]", "A-Za-z0-9")
    rx = rx.replace("[:alpha:]", "A-Za-z").replace("[:digit:]", "0-9")
    rx = rx.replace("[:xdigit:]", "0-9A-Fa-f").replace("[:upper:]", "A-Z")
    rx = rx.replace("[:lower:]", "a-z").replace("[:space:]", r" \t").replace("[:punct:]", "!-/")
    rx = re.sub(r"\\p\{?L\}?", "a-zA-Z", rx)
    rx = re.sub(r"\(\?[imsU]+\)", "", rx)
    rx = re.sub(r"\(\?-?[imsU]+:", "(?:", rx)
    rx = rx.replace("(?P<", "(?P<").replace("(?<", "(?P<")
    return rx


def in_category(cat, c):
    name = str(cat)
    if "DIGIT" in name:
        r = c.isdigit()
    elif "WORD" in name:
        r = c.isalnum() or c == "_"
    elif "SPACE" in name:
        r = c in " \t\n\r\f\v"
    else:
        r = False
    return not r if "NOT" in name else r


def class_chars(items):
    neg = False
    allowed = set()
    for op, av in items:
        op = str(op)
        if op == "NEGATE":
            neg = True
        elif op == "LITERAL":
            allowed.add(chr(av))
        elif op == "RANGE":
            for c in range(av[0], av[1] + 1):
                if c < 128:
                    allowed.add(chr(c))
        elif op == "CATEGORY":
            for c in PRINTABLE + [" "]:
                if in_category(av, c):
                    allowed.add(c)
    if neg:
        # Negated classes are delimiters or "anything but": pick safe token characters.
        allowed = set(c for c in "abcdefghijklmnopqrstuvwxyz0123456789" if c not in allowed)
    # Sampling sticks to printable non-space characters where the class allows.
    visible = sorted(c for c in allowed if c not in " \t\n\r\f\v")
    # Symbols that would end the value in code (quotes, brackets, `$`, `\\`) are left out
    # where the class allows anything else: the sample stays one token.
    tame = [c for c in visible if c.isalnum() or c in "_-+/=.~"]
    return tame or visible or sorted(allowed) or ["a"]


class Gen:
    def __init__(self, rng, want_group=None):
        self.rng = rng
        self.want = want_group
        self.captured = {}

    def seq(self, nodes):
        return "".join(self.node(op, av) for op, av in nodes)

    def node(self, op, av):
        op = str(op)
        rng = self.rng
        if op == "LITERAL":
            return chr(av)
        if op == "NOT_LITERAL":
            return rng.choice([c for c in "abcdefghijk0123456789" if ord(c) != av])
        if op == "ANY":
            # An unescaped `.` in these rule sets almost always stands for a dot.
            return "."
        if op == "IN":
            return rng.choice(class_chars(av))
        if op == "BRANCH":
            return self.seq(rng.choice(av[1]))
        if op == "SUBPATTERN":
            group, _, _, sub = av
            s = self.seq(sub)
            if group is not None:
                self.captured[group] = s
            return s
        if op in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            lo, hi, sub = av
            if op == "MIN_REPEAT" and lo == 0:
                n = 0
            else:
                top = hi if hi != MAXREPEAT else lo + 12
                top = min(top, lo + 40) if lo < 200 else lo
                n = rng.randint(lo, max(lo, top))
            if len(sub) == 1 and str(sub[0][0]) == "ANY":
                # `.{10,}` is "any character": letters and digits.
                return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(n))
            return "".join(self.seq(sub) for _ in range(n))
        if op in ("AT", "ASSERT", "ASSERT_NOT"):
            return ""
        if op == "CATEGORY":
            return rng.choice([c for c in PRINTABLE if in_category(av, c)])
        if op == "GROUPREF":
            return self.captured.get(av, "")
        raise ValueError(op)


def find_group(nodes, g):
    for op, av in nodes:
        op = str(op)
        if op == "SUBPATTERN":
            if av[0] == g:
                return av[3]
            r = find_group(av[3], g)
            if r is not None:
                return r
        elif op == "BRANCH":
            for alt in av[1]:
                r = find_group(alt, g)
                if r is not None:
                    return r
        elif op in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            r = find_group(av[2], g)
            if r is not None:
                return r
    return None


def entropy(s):
    if not s:
        return 0.0
    counts = {}
    for c in s:
        counts[c] = counts.get(c, 0) + 1
    return -sum(n / len(s) * math.log2(n / len(s)) for n in counts.values())


BAD = re.compile(r"(?i)example|xxxx|\*\*\*\*|redacted|0000000|placeholder")


def sample(rx, group, rng, min_entropy=None, tries=400):
    """A value the rule's secret group matches, as random as the rule asks."""
    parsed = sre_parse.parse(go_to_py(rx))
    nodes = list(parsed)
    sub = find_group(nodes, group) if group else None
    if sub is None:
        sub = nodes
    sub = list(sub)
    best = None
    for _ in range(tries):
        s = Gen(rng).seq(sub).strip()
        s = s.strip("'\"` ")
        if not s or BAD.search(s) or "\n" in s or "\t" in s:
            continue
        if min_entropy and entropy(s) < min_entropy + 0.2:
            continue
        if len(set(c for c in s if c.isalnum())) < 8 and len(s) >= 12:
            continue
        best = s
        break
    return best


def capture_count(rx):
    try:
        return sre_parse.parse(go_to_py(rx)).state.groups - 1
    except Exception:
        return 0


SEMI_GENERIC = "(?:=|>|:{1,3}=|\\|\\||:|=>|\\?=|,)"


def ident(kw):
    return re.sub(r"[^a-z0-9]+", "_", kw.lower()).strip("_")


def rand(rng, n, alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"):
    return "".join(rng.choice(alphabet) for _ in range(n))


def b64(rng, n):
    return rand(rng, n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/")


def pw(rng):
    return rand(rng, 6) + rng.choice("!%*-_.") + rand(rng, 5) + str(rng.randint(10, 99))


def pem(rng, label):
    body = [b64(rng, 64) for _ in range(3)] + [b64(rng, 24) + "=="]
    marked = "\n".join(f"⟦{line}⟧" for line in body)
    return f"-----BEGIN {label}PRIVATE KEY-----\n{marked}\n-----END {label}PRIVATE KEY-----"


def jwt(rng):
    import base64
    head = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
    body = base64.urlsafe_b64encode(('{"sub":"%s","iat":%d}' % (rand(rng, 12), rng.randint(1600000000, 1800000000))).encode()).decode().rstrip("=")
    return f"{head}.{body}.{rand(rng, 43, 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_')}"


def uuid_u(rng):
    return uuid(rng)


# Rules whose regex is a structure (a URL with a password, a config file, a command) rather
# than one token: the structure is written out, with a random secret in it.
OVERRIDES = {
    "gitleaks:private-key": lambda r: [pem(r, "DSA "), pem(r, "ENCRYPTED ")],
    "gitleaks:kubernetes-secret-yaml": lambda r: [
        f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: app\ndata:\n  config.json: ⟦{b64(r, 48)}⟧",
    ],
    "gitleaks:curl-auth-header": lambda r: [
        f'curl -H "Authorization: Bearer ⟦{rand(r, 40)}⟧" https://api.internal.dev/v1/items',
        f"curl --header 'Authorization: Token ⟦{rand(r, 32)}⟧' https://ci.internal.dev/api",
    ],
    "gitleaks:curl-auth-user": lambda r: [
        f"curl -u 'deploy:⟦{pw(r)}⟧' https://registry.internal.dev/v2/",
        f"curl --user admin:⟦{pw(r)}⟧ https://jenkins.internal.dev/job/build",
    ],
    "gitleaks:sidekiq-sensitive-url": lambda r: [
        f"source 'https://{rand(r, 8, '0123456789abcdef')}:⟦{rand(r, 8, '0123456789abcdef')}⟧@gems.contribsys.com/'",
    ],
    "gitleaks:microsoft-teams-webhook": lambda r: [
        f"TEAMS_URL=https://acme.webhook.office.com/webhookb2/{uuid(r)}@{uuid(r)}/IncomingWebhook/⟦{rand(r, 32, '0123456789abcdef')}⟧/{uuid(r)}",
    ],
    "gitleaks:nuget-config-password": lambda r: [
        f'<add key="ClearTextPassword" value="⟦{pw(r)}⟧" />',
    ],
    "gitleaks:jwt-base64": lambda r: [
        "  ⟦" + __import__("base64").b64encode(jwt(r).encode()).decode().rstrip("=") + "⟧",
    ],
    "trufflehog:privatekey": lambda r: [pem(r, "RSA "), pem(r, "")],
    "trufflehog:githubapp": lambda r: [pem(r, "RSA ")],
    "trufflehog:postgres": lambda r: [f"DATABASE_URL=postgresql://app:⟦{pw(r)}⟧@db.internal:5432/prod"],
    "trufflehog:mongodb": lambda r: [f'uri = "mongodb+srv://app:⟦{pw(r)}⟧@cluster0.{rand(r, 5).lower()}.mongodb.net/prod"'],
    "trufflehog:redis": lambda r: [f"REDIS_URL=redis://default:⟦{pw(r)}⟧@cache.internal:6379/0"],
    "trufflehog:rabbitmq": lambda r: [f"broker: amqps://worker:⟦{pw(r)}⟧@mq.internal:5671/vhost"],
    "trufflehog:ftp": lambda r: [f"mirror ftp://upload:⟦{pw(r)}⟧@files.internal/pub"],
    "trufflehog:uri": lambda r: [f"endpoint: https://svc:⟦{pw(r)}⟧@api.internal.dev/v1"],
    "trufflehog:ldap": lambda r: [f'ldap_password = "⟦{pw(r)}⟧"'],
    "trufflehog:jdbc": lambda r: [f"url=jdbc:mysql://db.internal:3306/app?user=app&password=⟦{pw(r)}⟧"],
    "trufflehog:sqlserver": lambda r: [f'"Server=tcp:db.internal,1433;Database=app;User ID=app;Password=⟦{pw(r)}⟧;"'],
    "trufflehog:docker": lambda r: ['{"auths": {"registry.internal": {"auth": "⟦' + b64(r, 40) + '⟧"}}}'],
    "trufflehog:auth0managementapitoken": lambda r: [f"AUTH0_TOKEN=⟦{jwt(r)}⟧"],
    "trufflehog:shopify": lambda r: [f"  ⟦shpat_{rand(r, 32, '0123456789abcdef')}⟧", f'{{"value": "⟦shppa_{rand(r, 32, "0123456789abcdef")}⟧"}}'],
    "trufflehog:hashicorpvault": lambda r: [f"VAULT_TOKEN=⟦hvs.{rand(r, 92)}⟧"],
    "trufflehog:couchbase": lambda r: [f'couchbase_password = "⟦{pw(r)}⟧"'],
    "trufflehog:azureappconfigconnectionstring": lambda r: [
        f"APP_CONFIG=Endpoint=https://acme.azconfig.io;Id={rand(r, 4)}-l0-s0:{rand(r, 20)};Secret=⟦{b64(r, 43)}=⟧"
    ],
    "trufflehog:gcp": lambda r: [
        f'  "private_key_id": "⟦{hexs(r, 40)}⟧",',
        f'  "private_key": "{pem(r, "").replace(chr(10), chr(92) + "n")}",',
    ],
    "trufflehog:gcpapplicationdefaultcredentials": lambda r: [
        f'  "client_secret": "⟦GOCSPX-{rand(r, 28)}⟧",',
        f'  "refresh_token": "⟦1//{rand(r, 60)}⟧",',
    ],
    "trufflehog:mapbox": lambda r: [
        f"MAPBOX_TOKEN=⟦sk.eyJ1IjoiYWNtZSIsImEiOiJ{rand(r, 20)}J9.{rand(r, 22)}⟧",
        f'"mapbox_secret": "⟦sk.eyJ1IjoiYWNtZSIsImEiOiJ{rand(r, 20)}J9.{rand(r, 22)}⟧"',
    ],
    "trufflehog:snowflake": lambda r: [f'snowflake_password = "⟦{pw(r)}⟧"'],
}


# Rules whose value is public by design (shipped to browsers): the scrubber keeps publishable
# keys whatever their name, so they are not planted as secrets.
PUBLIC_RULES = {"mapbox-api-token"}


def override_rows(src, kind, rng):
    rows = [("secret", kind, src, line) for line in OVERRIDES[src](rng)]
    rows += [("benign", kind, src, line) for line in lookalikes(rng, kind.split("-")[0], "", False, "")]
    return rows


def secret_contexts(rng, kw, s, keyworded):
    """The lines a secret is planted in: a keyword assignment where the rule needs one, else the
    token bare, in JSON and on an env line."""
    out = []
    if keyworded:
        k = ident(kw) or "api"
        out.append(f"{k.upper()}_API_KEY=⟦{s}⟧")
        out.append(f'"{k}_token": "⟦{s}⟧",')
        out.append(f"{k}_secret: ⟦{s}⟧")
    else:
        out.append(f"  ⟦{s}⟧")
        out.append(f'{{"value": "⟦{s}⟧"}}')
        out.append(f"SERVICE_CONFIG=⟦{s}⟧")
    return out


def json_str(s):
    return '"' + s.replace('"', '\\"') + '"'


def uuid(rng):
    h = "".join(rng.choice("0123456789abcdef") for _ in range(32))
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


def hexs(rng, n):
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def lookalikes(rng, kw, s, keyworded, prefix):
    """Values beside the rule's keyword or prefix that are not credentials."""
    k = ident(kw) or "svc"
    out = []
    if keyworded:
        out.append(f'{k}_base_url = "https://api.{k.replace("_", "")}.com/v{rng.randint(1, 4)}"')
        out.append(f"{k.upper()}_SDK_VERSION={rng.randint(1, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}")
        out.append(f'"{k}_request_id": "{uuid(rng)}",')
        if not re.search(r"pass|pwd|secret|token|key|auth|cred", k):
            out.append(f"{k}_commit = \"{hexs(rng, 40)}\"")
        # The keyword's credential read from somewhere else, and how long it lives.
        out.append(f'{k}_api_key = os.environ["{k.upper()}_API_KEY"]')
        out.append(f"{k.upper()}_TOKEN=${{{k.upper()}_TOKEN}}")
        out.append(f"{k}_token_ttl_seconds: {rng.choice([300, 900, 3600, 86400])}")
        # Names and values beside the keyword that describe a credential without holding one.
        v = f"{rng.randint(1, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}"
        out.append(rng.choice([
            f'{k}: "{k.replace("_", "-")}-python/{v}"',
            f"{k}_zone_id = \"{hexs(rng, 32)}\"",
            f"{k.upper()}_BUILD_NUMBER={rng.randint(10**16, 10**17)}",
            f"{k}_secret_name: prod-{k.replace('_', '-')}-credentials",
            f'{k}_token_type = "BearerAccessToken"',
            f'{k}_key_path = "/etc/{k}/{k}-client.pem"',
        ]))
        # The same shape without the keyword, where it is short or hex enough that nothing
        # but the keyword could tell it from an id.
        if s and (len(s) < 24 or re.fullmatch(r"[0-9a-f-]+", s)) and not s.isdigit():
            other = "".join(
                rng.choice("0123456789abcdef") if c in "0123456789abcdef" else
                rng.choice("abcdefghijklmnopqrstuvwxyz") if c.islower() else
                rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ") if c.isupper() else c for c in s)
            out.append(f'"build_ref": "{other}",')
    else:
        p = prefix or k
        if len(p) <= 12 and p.isascii():
            out.append(f"# tokens start with `{p}`, see the docs")
        out.append(f"sha256:{hexs(rng, 64)}  {k}.tar.gz")
        out.append(f'"{k}_trace_id": "{uuid(rng)}",')
        if p and len(p) <= 12 and re.fullmatch(r"[A-Za-z0-9_.-]+", p):
            # The prefix as an identifier or a regex, not followed by a token.
            out.append(f"const PREFIX = {json_str(p)}; // {k} tokens")
            out.append(f"if token.startswith({json_str(p)}):")
    return out


def literal_prefix(rx, group):
    """The literal characters the secret must start with (case kept), if any."""
    try:
        nodes = list(sre_parse.parse(go_to_py(rx)))
    except Exception:
        return ""
    sub = find_group(nodes, group) if group else None
    sub = list(sub) if sub is not None else nodes
    out = ""
    for op, av in sub:
        op = str(op)
        if op == "LITERAL":
            out += chr(av)
        elif op in ("AT", "ASSERT", "ASSERT_NOT"):
            if out:
                break
            continue
        elif op == "SUBPATTERN" and av[0] is None or (op == "SUBPATTERN" and not out):
            inner = av[3]
            if all(str(o) == "LITERAL" for o, _ in inner):
                out += "".join(chr(a) for _, a in inner)
            else:
                break
        else:
            break
    return out


def gitleaks(path, rng):
    rules = tomllib.load(open(path, "rb"))["rules"]
    rows = []
    for r in rules:
        rid = r["id"]
        rx = r.get("regex")
        src = f"gitleaks:{rid}"
        if rx is None:
            # pkcs12-file is a path rule: the file's name, not a text shape.
            continue
        if src in OVERRIDES:
            rows += override_rows(src, rid, rng)
            continue
        if rid in PUBLIC_RULES:
            continue
        group = r.get("secretGroup") or (1 if capture_count(rx) >= 1 else None)
        kws = r.get("keywords") or [rid.split("-")[0]]
        keyworded = SEMI_GENERIC in rx or rx.lstrip("(?i)").startswith("[\\w.-]")
        try:
            s = sample(rx, group, rng, r.get("entropy"))
        except Exception as e:
            print(f"# gitleaks:{rid}: {e}", file=sys.stderr)
            s = None
        if s is None:
            print(f"# gitleaks:{rid}: no sample", file=sys.stderr)
            continue
        prefix = literal_prefix(rx, group)
        # gitleaks looks only at text holding one of the rule's keywords.
        if not any(k.lower() in s.lower() for k in kws):
            keyworded = True
        kind = rid
        for line in secret_contexts(rng, kws[0], s, keyworded):
            rows.append(("secret", kind, src, line))
        for line in lookalikes(rng, kws[0], s, keyworded, prefix if len(prefix) >= 3 else ""):
            rows.append(("benign", kind, src, line))
    return rows


COMMON = {
    "common.RegexPattern": "0-9a-z",
    "common.AlphaNumPattern": "0-9a-zA-Z",
    "common.HexPattern": "0-9a-f",
    "common.UUIDPattern": "`\\b([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\\b`",
    "common.UUIDPatternUpperCase": "`\\b([0-9A-Z]{8}-[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{12})\\b`",
}


def expand_common(arg):
    """trufflehog's `common.BuildRegex(…)`, `common.BuildRegexJWT(…)` and pattern constants,
    spelled out as Go raw strings."""
    def build(m):
        pat, special, n = m.group(1), m.group(2), m.group(3)
        pat = COMMON.get(pat, pat.strip('"'))
        return f"`\\b([{pat}{special}]{{{n}}})\\b`"

    def jwt(m):
        a, b, c = m.group(1), m.group(2), m.group(3)
        an = "0-9a-zA-Z"
        return f"`\\b(ey[{an}]{{{a}}}.ey[{an}\\-\\/_]{{{b}}}.[{an}\\-\\/_]{{{c}}})\\b`"

    arg = re.sub(r'common\.BuildRegex\((common\.\w+|"[^"]*"),\s*"([^"]*)",\s*(\d+)\)', build, arg)
    arg = re.sub(r'common\.BuildRegexJWT\("([^"]*)",\s*"([^"]*)",\s*"([^"]*)"\)', jwt, arg)
    for k in ("common.UUIDPatternUpperCase", "common.UUIDPattern"):
        arg = arg.replace(k, COMMON[k])
    return arg


def score(var, body):
    s = 0
    if re.search(r"key|token|secret|pat$|pass|cred|auth|sig|hook|apikey|private", var):
        s += 2
    if re.search(r"secret|token|pass", var):
        s += 1
    if s == 0 and re.search(r"url|uri|domain|host|endpoint|email|user|region|org|account|tenant|instance|"
                 r"subdomain|server|project|client_?id|^id|id$|name|workspace|app_?id|team|zone|"
                 r"phone|site|base|env|version|cluster|region|location|customer", var):
        s -= 3
    if capture_count(body) < 1:
        s -= 1
    return s


GO_RAW = re.compile(r"`([^`]*)`")


def trufflehog(root, rng):
    rows = []
    for name in sorted(os.listdir(root)):
        d = os.path.join(root, name)
        if not os.path.isdir(d):
            continue
        files = []
        for dirpath, _, fnames in os.walk(d):
            files += [os.path.join(dirpath, f) for f in fnames if f.endswith(".go") and not f.endswith("_test.go")]
        src_text = "".join(open(f, encoding="utf-8", errors="replace").read() for f in files)
        src_text = re.sub(r"MustCompile\(\s*\n\s*", "MustCompile(", src_text)
        src_text = re.sub(r"(`),?\s*\n\s*\)", r"\1)", src_text)
        if f"trufflehog:{name}" in OVERRIDES:
            rows += override_rows(f"trufflehog:{name}", name, rng)
            continue
        km = re.search(r"func \(\w+ Scanner\) Keywords\(\) \[\]string \{\s*return \[\]string\{([^}]*)\}", src_text)
        if not km:
            continue
        kws = re.findall(r'"([^"]+)"', km.group(1))
        if not kws:
            continue
        # The detector's regexes: `regexp.MustCompile(<prefix> + `…`)`.
        regexes = []
        for m in re.finditer(r"(\w*)\s*=\s*(?:regexp\.MustCompile|MustCompile)\(([^\n]*)\)\s*\n", src_text):
            var, arg = m.group(1).lower(), m.group(2)
            arg = expand_common(arg)
            raws = GO_RAW.findall(arg)
            if not raws:
                raws = [bytes(x, "utf-8").decode("unicode_escape") for x in re.findall(r'"((?:[^"\\]|\\.)*)"', arg)]
            if not raws:
                continue
            body = raws[-1]
            regexes.append((score(var, body), "PrefixRegex" in arg, body))
        if not regexes:
            continue
        # The secret's regex: the one whose name says key/token/secret, not a URL, id or host.
        regexes.sort(key=lambda r: -r[0])
        s = None
        for sc, prefixed, body in regexes:
            if sc < 0:
                break
            try:
                group = 1 if capture_count(body) >= 1 else None
                s = sample(body, group, rng)
            except Exception as e:
                print(f"# trufflehog:{name}: {e}", file=sys.stderr)
                s = None
            hosty = re.search(r"://|\.(?:com|io|app|co|net|org|cloud)\b", s or "")
            if s and len(s) >= 8 and not (s.isdigit() and len(s) < 16) and (not hosty or "webhook" in name):
                break
            s = None
        if not s:
            print(f"# trufflehog:{name}: no usable sample", file=sys.stderr)
            continue
        prefix = literal_prefix(body, group)
        # trufflehog looks only at chunks holding one of the detector's keywords.
        has_kw = any(k.lower() in s.lower() for k in kws)
        distinctive = len(prefix) >= 3 and not prefixed and has_kw
        keyworded = not distinctive
        src = f"trufflehog:{name}"
        kw = kws[0]
        for line in secret_contexts(rng, kw, s, keyworded):
            rows.append(("secret", name, src, line))
        for line in lookalikes(rng, kw, s, keyworded, prefix if distinctive else ""):
            rows.append(("benign", name, src, line))
    return rows


HEADER = """# Every rule of the world's two big secret scanners, one FAKE credential each: generated by
# gen_secret_corpus_rules.py from the rule's own regex (fixed seed {seed}; no project's test string
# is copied), from gitleaks' config/gitleaks.toml (every rule: `gitleaks:<id>`) and trufflehog's
# pkg/detectors (every detector whose Keywords() and regex could be read: `trufflehog:<detector>`).
# Same format as secret_corpus_world.txt:
#   secret<TAB>kind<TAB>source<TAB>line      the values between ⟦ and ⟧ must disappear
#   benign<TAB>kind<TAB>source<TAB>line      must come out unchanged
# A rule that needs a keyword is planted as an assignment to a name holding that keyword (env
# line, JSON, YAML); a rule whose token carries its own prefix is planted bare, in JSON and on an
# env line with a neutral name. Look-alikes beside each rule: the keyword with a URL, a version,
# a request UUID, a commit hash; a prefix named in prose, a sha256 digest, a trace UUID.
"""


def main():
    rng = random.Random(SEED)
    rows = gitleaks(sys.argv[1], rng)
    rows += trufflehog(sys.argv[2], rng)
    seen = set()
    sys.stdout.write(HEADER.format(seed=SEED))
    for row in rows:
        if row[3] in seen:
            continue
        seen.add(row[3])
        line = row[3].replace("\\", "\\\\").replace("\n", "\\n")
        assert "\t" not in line
        print("\t".join(row[:3] + (line,)))


if __name__ == "__main__":
    main()
