#!/usr/bin/env python3
"""Writes byte-exact vLLM KV-event payloads for kvroute's encoder and decoder tests.

The structs below are declared as vLLM declares them in vllm/distributed/kv_events.py at each
version named (field names, field order, defaults and msgspec struct options), and every payload is
encoded by msgspec's own msgpack Encoder, as vLLM's ZmqEventPublisher does. So a .bin file here is
what that vLLM version puts in the third frame of a ZMQ message for the same events.

Layouts (the `layout` of each fixture in fixtures.json):

  v0.9      vLLM v0.9.0 (#16750): batch [ts, events]; every event a tagged array
            ["BlockStored", block_hashes, parent_block_hash, token_ids, block_size, lora_id];
            block hashes are Python ints (signed 64-bit with the then-default builtin hash).
            Decode-only: the mock engine does not emit it.
  legacy    vLLM v0.10.2 .. v0.11 (after #18925 data_parallel_rank, #19737 medium, #23673 hashes
            as bytes | int): batch [ts, events, data_parallel_rank]; tagged arrays
            ["BlockStored", hashes, parent, token_ids, block_size, lora_id, medium],
            ["BlockRemoved", hashes, medium], ["AllBlocksCleared"]. The mock engine emits it with
            --kv-events-layout legacy.
  array-v0.23  the last all-array shape (after #27577 lora_name, #33304 extra_keys, #37688 group_idx,
            #40984 kv_cache_spec_*): trailing fields left at their default are omitted.
            Decode-only.
  current   vLLM after #42892 (v0.24 and later, e.g. v0.26): the batch stays a positional array
            [ts, events, data_parallel_rank]; each event is a msgpack map whose first key is
            "type" (the tag), then the fields in declaration order, fields at their default
            omitted. The mock engine emits it with --kv-events-layout current (the default).
  map-batch vLLM main at 0181ea3, where EventBatch is no longer array_like either: the batch is a
            map {"ts", "events", "data_parallel_rank"}. Decode-only.

Block hashes: `int` is vLLM's default (VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=1): the lower 64 bits
of the digest as an unsigned int, so values >= 2**63 are msgpack uint64. `bytes` is
VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=0: the raw 32-byte digest. The mock engine's 64-bit keys become
32 bytes as sha256(key as 8 big-endian bytes)[:24] + key as 8 big-endian bytes, so the last 8 bytes
read big-endian give back the int form (as vLLM's maybe_convert_block_hash and llm-d do).

fixtures.json describes each payload in a neutral form: hashes as unsigned decimal strings (int
form) or hex (bytes form), so a Java test can rebuild the same events and compare bytes.

Run: python3 make_fixtures.py   (needs msgspec; rewrites *.bin and fixtures.json beside it)
     python3 make_fixtures.py --check   (exit 1 if a committed file differs from what it would write)
"""

import hashlib
import json
import os
import sys
from typing import Any, Optional, Union

import msgspec

HERE = os.path.dirname(os.path.abspath(__file__))
ExternalBlockHash = Union[bytes, int]


# --- vLLM v0.9.0 ------------------------------------------------------------------------------
class V09EventBatch(msgspec.Struct, array_like=True, omit_defaults=True, gc=False):
    ts: float
    events: list[Any]


class V09KVCacheEvent(msgspec.Struct, array_like=True, omit_defaults=True, gc=False, tag=True):
    pass


class V09BlockStored(V09KVCacheEvent, tag="BlockStored"):
    block_hashes: list[int]
    parent_block_hash: Optional[int]
    token_ids: list[int]
    block_size: int
    lora_id: Optional[int]


class V09BlockRemoved(V09KVCacheEvent, tag="BlockRemoved"):
    block_hashes: list[int]


class V09AllBlocksCleared(V09KVCacheEvent, tag="AllBlocksCleared"):
    pass


class V09KVEventBatch(V09EventBatch):
    events: list[Union[V09BlockStored, V09BlockRemoved, V09AllBlocksCleared]]


# --- vLLM v0.10.2 .. v0.11: the mock's `legacy` layout -------------------------------------------
class LegacyEventBatch(msgspec.Struct, array_like=True, omit_defaults=True, gc=False):
    ts: float
    events: list[Any]
    data_parallel_rank: Optional[int] = None


class LegacyKVCacheEvent(msgspec.Struct, array_like=True, omit_defaults=True, gc=False, tag=True):
    pass


class LegacyBlockStored(LegacyKVCacheEvent, tag="BlockStored"):
    block_hashes: list[ExternalBlockHash]
    parent_block_hash: Optional[ExternalBlockHash]
    token_ids: list[int]
    block_size: int
    lora_id: Optional[int]
    medium: Optional[str]


class LegacyBlockRemoved(LegacyKVCacheEvent, tag="BlockRemoved"):
    block_hashes: list[ExternalBlockHash]
    medium: Optional[str]


class LegacyAllBlocksCleared(LegacyKVCacheEvent, tag="AllBlocksCleared"):
    pass


class LegacyKVEventBatch(LegacyEventBatch):
    events: list[Union[LegacyBlockStored, LegacyBlockRemoved, LegacyAllBlocksCleared]]


# --- the last all-array shape (v0.23) -----------------------------------------------------------
class A23EventBatch(msgspec.Struct, array_like=True, omit_defaults=True, gc=False):
    ts: float
    events: list[Any]
    data_parallel_rank: Optional[int] = None


class A23KVCacheEvent(msgspec.Struct, array_like=True, omit_defaults=True, gc=False, tag=True):
    pass


class A23BlockStored(A23KVCacheEvent, tag="BlockStored"):
    block_hashes: list[ExternalBlockHash]
    parent_block_hash: Optional[ExternalBlockHash]
    token_ids: list[int]
    block_size: int
    lora_id: Optional[int]
    medium: Optional[str]
    lora_name: Optional[str]
    extra_keys: Optional[list[Optional[tuple[Any, ...]]]] = None
    group_idx: Optional[int] = None
    kv_cache_spec_kind: Optional[str] = None
    kv_cache_spec_sliding_window: Optional[int] = None


class A23BlockRemoved(A23KVCacheEvent, tag="BlockRemoved"):
    block_hashes: list[ExternalBlockHash]
    medium: Optional[str]
    group_idx: Optional[int] = None


class A23AllBlocksCleared(A23KVCacheEvent, tag="AllBlocksCleared"):
    pass


class A23KVEventBatch(A23EventBatch):
    events: list[Union[A23BlockStored, A23BlockRemoved, A23AllBlocksCleared]]


# --- after #42892 (v0.24+, e.g. v0.26): the mock's `current` layout ---------------------------------
class CurEventBatch(msgspec.Struct, array_like=True, omit_defaults=True, gc=False):
    ts: float
    events: list[Any]
    data_parallel_rank: Optional[int] = None


class CurKVCacheEvent(msgspec.Struct, omit_defaults=True, gc=False, tag=True):
    pass


class CurBlockStored(CurKVCacheEvent, tag="BlockStored"):
    block_hashes: list[ExternalBlockHash]
    parent_block_hash: Optional[ExternalBlockHash]
    token_ids: list[int]
    block_size: int
    lora_id: Optional[int]
    medium: Optional[str]
    lora_name: Optional[str]
    extra_keys: Optional[list[Optional[tuple[Any, ...]]]] = None
    group_idx: Optional[int] = None
    kv_cache_spec_kind: Optional[str] = None
    kv_cache_spec_sliding_window: Optional[int] = None


class CurBlockRemoved(CurKVCacheEvent, tag="BlockRemoved"):
    block_hashes: list[ExternalBlockHash]
    medium: Optional[str]
    group_idx: Optional[int] = None


class CurAllBlocksCleared(CurKVCacheEvent, tag="AllBlocksCleared"):
    pass


class CurKVEventBatch(CurEventBatch):
    events: list[Union[CurBlockStored, CurBlockRemoved, CurAllBlocksCleared]]


# --- vLLM main @0181ea3: the batch is a map too -------------------------------------------------
class MapEventBatch(msgspec.Struct, omit_defaults=True, gc=False):
    ts: float
    events: list[Any]
    data_parallel_rank: Optional[int] = None


class MapKVEventBatch(MapEventBatch):
    events: list[Union[CurBlockStored, CurBlockRemoved, CurAllBlocksCleared]]


LAYOUTS = {
    "v0.9": (V09KVEventBatch, V09BlockStored, V09BlockRemoved, V09AllBlocksCleared),
    "legacy": (LegacyKVEventBatch, LegacyBlockStored, LegacyBlockRemoved, LegacyAllBlocksCleared),
    "array-v0.23": (A23KVEventBatch, A23BlockStored, A23BlockRemoved, A23AllBlocksCleared),
    "current": (CurKVEventBatch, CurBlockStored, CurBlockRemoved, CurAllBlocksCleared),
    "map-batch": (MapKVEventBatch, CurBlockStored, CurBlockRemoved, CurAllBlocksCleared),
}
EMITTED_BY_MOCK = {"legacy", "current"}

# ---------------------------------------------------------------------------------------------
# The events, in a neutral form. Hashes are unsigned 64-bit keys; three are above 2**63 (uint64 on
# the wire), one fits in a positive fixint, one in uint16.
H = [
    0xDAB6_0F2C_5A11_93C0,  # 15760518052499183552, the hash of a captured vLLM v0.26 event
    0x0123_4567_89AB_CDEF,
    0xFEDC_BA98_7654_3210,
    0x0000_0000_0000_0007,
    0x0000_0000_0000_BEEF,
    0x8000_0000_0000_0000,
]
TOKENS_A = list(range(1000, 1016))  # one block of 16
TOKENS_B = [151644, 872, 198, 9064, 374, 279, 6722, 315, 5616, 30, 151645, 198, 151644, 77091, 198, 151667]
TS_1 = 1764614400.125
TS_2 = 1764614401.5

SCENARIOS = [
    {
        "name": "stored-root",
        "doc": "one block stored from the root (no parent), no LoRA",
        "ts": TS_1,
        "events": [
            {"type": "BlockStored", "block_hashes": [H[0]], "parent_block_hash": None,
             "token_ids": TOKENS_B, "block_size": 16, "lora": None},
        ],
    },
    {
        "name": "stored-chain-removed",
        "doc": "two blocks after a parent, then two evictions (one BlockRemoved per block, as vLLM)",
        "ts": TS_2,
        "events": [
            {"type": "BlockStored", "block_hashes": [H[1], H[2]], "parent_block_hash": H[0],
             "token_ids": TOKENS_A + TOKENS_B, "block_size": 16, "lora": None},
            {"type": "BlockRemoved", "block_hashes": [H[3]]},
            {"type": "BlockRemoved", "block_hashes": [H[5]]},
        ],
    },
    {
        "name": "stored-lora",
        "doc": "a LoRA adapter's block (lora_id 1, lora_name 'sql-lora'; the name is the extra key)",
        "ts": TS_1,
        "events": [
            {"type": "BlockStored", "block_hashes": [H[4]], "parent_block_hash": H[3],
             "token_ids": TOKENS_A, "block_size": 16, "lora": {"id": 1, "name": "sql-lora"}},
        ],
    },
    {
        "name": "cleared",
        "doc": "AllBlocksCleared (a prefix-cache reset)",
        "ts": TS_2,
        "events": [{"type": "AllBlocksCleared"}],
    },
]

HASH_FORMATS = ["int", "bytes"]


def hash_bytes(key: int) -> bytes:
    be = key.to_bytes(8, "big")
    return hashlib.sha256(be).digest()[:24] + be


def wire_hash(key: Optional[int], fmt: str, layout: str):
    if key is None:
        return None
    if layout == "v0.9":
        # builtin hash(): a signed 64-bit Python int
        return key - (1 << 64) if key >= (1 << 63) else key
    return key if fmt == "int" else hash_bytes(key)


def build(layout: str, fmt: str, scenario: dict):
    batch_cls, stored, removed, cleared = LAYOUTS[layout]
    events = []
    for e in scenario["events"]:
        if e["type"] == "BlockStored":
            lora = e["lora"]
            hashes = [wire_hash(h, fmt, layout) for h in e["block_hashes"]]
            kw = dict(block_hashes=hashes,
                      parent_block_hash=wire_hash(e["parent_block_hash"], fmt, layout),
                      token_ids=e["token_ids"], block_size=e["block_size"],
                      lora_id=lora["id"] if lora else None)
            if layout != "v0.9":
                kw["medium"] = "GPU"
            if layout in ("array-v0.23", "current", "map-batch"):
                kw["lora_name"] = lora["name"] if lora else None
                kw["extra_keys"] = [(lora["name"],) if lora else None for _ in hashes]
                kw["group_idx"] = 0
                kw["kv_cache_spec_kind"] = "full_attention"
            events.append(stored(**kw))
        elif e["type"] == "BlockRemoved":
            hashes = [wire_hash(h, fmt, layout) for h in e["block_hashes"]]
            if layout == "v0.9":
                events.append(removed(block_hashes=hashes))
            elif layout == "legacy":
                events.append(removed(block_hashes=hashes, medium="GPU"))
            else:
                events.append(removed(block_hashes=hashes, medium="GPU", group_idx=0))
        else:
            events.append(cleared())
    if layout == "v0.9":
        return batch_cls(ts=scenario["ts"], events=events)
    # ZmqEventPublisher.publish() fills data_parallel_rank with its rank (0 here).
    return batch_cls(ts=scenario["ts"], events=events, data_parallel_rank=0)


def neutral(e: dict, fmt: str) -> dict:
    def h(k):
        if k is None:
            return None
        return str(k) if fmt == "int" else hash_bytes(k).hex()
    out = {"type": e["type"]}
    if e["type"] == "BlockStored":
        out.update(block_hashes=[h(k) for k in e["block_hashes"]],
                   parent_block_hash=h(e["parent_block_hash"]),
                   token_ids=e["token_ids"], block_size=e["block_size"],
                   lora_id=e["lora"]["id"] if e["lora"] else None,
                   lora_name=e["lora"]["name"] if e["lora"] else None)
    elif e["type"] == "BlockRemoved":
        out.update(block_hashes=[h(k) for k in e["block_hashes"]])
    return out


def render() -> dict:
    encoder = msgspec.msgpack.Encoder()
    files = {}
    described = []
    for layout in LAYOUTS:
        for fmt in (["int"] if layout == "v0.9" else HASH_FORMATS):
            for sc in SCENARIOS:
                name = f"{layout}-{fmt}-{sc['name']}.bin"
                payload = encoder.encode(build(layout, fmt, sc))
                # What a consumer that knows the layout decodes it into: vLLM's own structs.
                decoded = msgspec.msgpack.Decoder(LAYOUTS[layout][0]).decode(payload)
                assert len(decoded.events) == len(sc["events"]), name
                files[name] = payload
                described.append({
                    "file": name,
                    "layout": layout,
                    "hashFormat": fmt,
                    "emittedByMock": layout in EMITTED_BY_MOCK,
                    "doc": sc["doc"],
                    "ts": sc["ts"],
                    "dataParallelRank": None if layout == "v0.9" else 0,
                    "events": [neutral(e, fmt) for e in sc["events"]],
                    "sha256": hashlib.sha256(payload).hexdigest(),
                })
    desc = {
        "generator": "make_fixtures.py",
        "msgspec": msgspec.__version__,
        "hashBytes": "sha256(key as 8 big-endian bytes)[:24] + key as 8 big-endian bytes",
        "v0.9 hashes": "signed: keys >= 2**63 are written as key - 2**64 (Python builtin hash)",
        "fixtures": described,
    }
    files["fixtures.json"] = (json.dumps(desc, indent=1) + "\n").encode()
    return files


def main() -> int:
    files = render()
    check = "--check" in sys.argv[1:]
    stale = []
    for name, data in files.items():
        path = os.path.join(HERE, name)
        if check:
            try:
                with open(path, "rb") as f:
                    if f.read() != data:
                        stale.append(name)
            except FileNotFoundError:
                stale.append(name)
        else:
            with open(path, "wb") as f:
                f.write(data)
    if stale:
        print("stale fixtures: " + ", ".join(stale))
        return 1
    print(("checked " if check else "wrote ") + str(len(files)) + " files in " + HERE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
