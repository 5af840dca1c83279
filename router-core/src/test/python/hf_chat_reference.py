#!/usr/bin/env python3
"""Reference side of HfChatTemplateEquivalenceTest: a generated corpus of chat requests and the
prompt tokens Python transformers gives each of them.

Usage: hf_chat_reference.py MODEL_DIR OUT.jsonl [COUNT] [SEED]

Writes COUNT (default 520) lines {"id", "request", "text", "tokens"}: "request" is the
/v1/chat/completions body, "text" the rendered prompt and "tokens" the ids of
AutoTokenizer.from_pretrained(MODEL_DIR).apply_chat_template(messages, tools=..., tokenize=True,
add_generation_prompt=..., **chat_template_kwargs). The messages and tools are first prepared as
vLLM's chat_utils prepares a request for a template that takes content as a string: content parts
joined with "\\n", null content as "", tool-call arguments strings parsed as JSON, tools as pydantic's
model_dump of vLLM's tool model gives them (type, function{name, description, parameters}).

The corpus covers multi-turn histories (each conversation is emitted at several lengths, so the
Java side's prefix cache is exercised), system prompts, tool definitions, tool calls and results,
content-part arrays, reasoning blocks, CJK, emoji, combining marks, empty and whitespace-only
messages, and very long messages. Deterministic for a given seed.
"""
import json
import random
import sys

from transformers import AutoTokenizer

WORDS = ("the router keeps a prefix index of every engine's cache and sends each turn where its "
         "history already lives unless the queues drift apart token block page hash vLLM SGLang "
         "prefill decode latency throughput session replica fleet").split()
CJK = ["你好，世界", "キャッシュを意識したルーティング", "한국어 문장입니다", "前缀缓存命中率", "東京都"]
EMOJI = ["😀", "🚀🔥", "👩‍💻", "🇫🇷", "🧑🏽‍🚀", "✅"]
COMBINING = ["e\u0301", "a\u0308\u0304", "n\u0303", "\u0915\u094d\u0937", "Z\u0351\u036b\u0343"]
SPACES = ["", " ", "  \n ", "\t", "\n\n", "\u3000", "\u00a0 ", " \u2003"]
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
     "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                    "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "search", "description": "Search the web: «quotes» and \"escapes\"\\n",
     "parameters": {"type": "object", "properties": {"q": {"type": "string"}, "k": {"type": "integer"}}}}},
    {"type": "function", "function": {"name": "no_description",
     "parameters": {"type": "object", "properties": {}}}},
]


def text(rng, lo=3, hi=40):
    parts = []
    for _ in range(rng.randint(lo, hi)):
        r = rng.random()
        if r < 0.75:
            parts.append(rng.choice(WORDS))
        elif r < 0.83:
            parts.append(rng.choice(CJK))
        elif r < 0.89:
            parts.append(rng.choice(EMOJI))
        elif r < 0.94:
            parts.append(rng.choice(COMBINING))
        else:
            parts.append(rng.choice(["1234", "3.14", "<b>", "\\n", "'s", "  ", "\n", "{\"a\": 1}", "–", "<|im_start|>"]))
    return rng.choice([" ", " ", " ", "\n"]).join(parts) if parts else ""


def content(rng, long_ok=True):
    r = rng.random()
    if r < 0.06:
        return rng.choice(SPACES)
    if long_ok and r < 0.09:
        return text(rng, 2500, 4000)  # very long: ~15-25K characters
    if r < 0.17:
        return [{"type": "text", "text": text(rng)} for _ in range(rng.randint(1, 3))]
    return text(rng)


def tool_call(rng, i):
    name = rng.choice(["get_weather", "search", "no_description"])
    args = {"city": rng.choice(["Paris", "東京", "Zürich"])} if name == "get_weather" else {"q": text(rng, 1, 5), "k": rng.randint(1, 9)}
    return {"id": "call_%d" % i, "type": "function",
            "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=rng.random() < 0.5)}}


def conversation(rng, with_tools):
    msgs = []
    if rng.random() < 0.6:
        msgs.append({"role": "system", "content": content(rng, long_ok=False)})
    for turn in range(rng.randint(1, 6)):
        msgs.append({"role": "user", "content": content(rng)})
        yield list(msgs)
        if with_tools and rng.random() < 0.5:
            calls = [tool_call(rng, turn * 10 + k) for k in range(rng.randint(1, 2))]
            msgs.append({"role": "assistant", "content": rng.choice([None, "", text(rng, 1, 6)]), "tool_calls": calls})
            for c in calls:
                msgs.append({"role": "tool", "tool_call_id": c["id"], "content": text(rng, 1, 20)})
            yield list(msgs)
        reply = content(rng)
        if isinstance(reply, str) and rng.random() < 0.25:
            reply = "<think>\n" + text(rng, 2, 10) + "\n</think>\n\n" + reply
        msgs.append({"role": "assistant", "content": reply})


def vllm_messages(messages):
    out = []
    for m in messages:
        c = m.get("content")
        if c is None:
            c = ""
        elif isinstance(c, list):
            c = "\n".join(p["text"] for p in c if p.get("type") == "text")
        msg = {"role": m["role"], "content": c}
        if "name" in m:
            msg["name"] = m["name"]
        if m["role"] == "assistant" and m.get("tool_calls") is not None:
            calls = json.loads(json.dumps(m["tool_calls"]))
            for call in calls:
                if isinstance(call.get("function", {}).get("arguments"), str):
                    call["function"]["arguments"] = json.loads(call["function"]["arguments"])
            msg["tool_calls"] = calls
        if m["role"] == "tool" and m.get("tool_call_id") is not None:
            msg["tool_call_id"] = m["tool_call_id"]
        out.append(msg)
    return out


def vllm_tools(tools):
    if tools is None:
        return None
    out = []
    for t in tools:
        f = t["function"]
        fn = {"name": f["name"], "description": f.get("description"), "parameters": f.get("parameters")}
        for k, v in f.items():
            fn.setdefault(k, v)
        d = {"type": t.get("type", "function"), "function": fn}
        for k, v in t.items():
            d.setdefault(k, v)
        out.append(d)
    return out


def main():
    model_dir, out_path = sys.argv[1], sys.argv[2]
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 520
    rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 14)
    tok = AutoTokenizer.from_pretrained(model_dir)
    written = 0
    with open(out_path, "w", encoding="utf-8") as out:
        while written < count:
            with_tools = rng.random() < 0.35
            for msgs in conversation(rng, with_tools):
                if written >= count:
                    break
                body = {"model": "m", "messages": msgs}
                if with_tools:
                    body["tools"] = rng.sample(TOOLS, rng.randint(1, len(TOOLS)))
                kwargs = {}
                if rng.random() < 0.2:
                    kwargs["enable_thinking"] = rng.random() < 0.5
                    body["chat_template_kwargs"] = kwargs
                agp = True
                if rng.random() < 0.05:
                    agp = False
                    body["add_generation_prompt"] = False
                rendered = tok.apply_chat_template(vllm_messages(msgs), tools=vllm_tools(body.get("tools")),
                                                   add_generation_prompt=agp, tokenize=False, **kwargs)
                ids = tok.apply_chat_template(vllm_messages(msgs), tools=vllm_tools(body.get("tools")),
                                              add_generation_prompt=agp, tokenize=True, **kwargs)
                if hasattr(ids, "keys"):
                    ids = ids["input_ids"]
                ids = list(ids)
                assert ids == tok.encode(rendered, add_special_tokens=False), "tokenize=True differs from encode(text)"
                out.write(json.dumps({"id": written, "request": body, "text": rendered, "tokens": ids},
                                     ensure_ascii=False) + "\n")
                written += 1
    print("wrote %d requests to %s" % (written, out_path))


if __name__ == "__main__":
    main()
