#!/usr/bin/env python3
"""Subscribes to a mock engine's KV events as a vLLM consumer would and checks them.

Usage: subscribe_check.py ENDPOINT REPLAY_ENDPOINT TOPIC LAYOUT

Connects a pyzmq SUB socket, prints READY, waits for the first live message (3 frames: topic,
8-byte big-endian sequence, payload) and decodes its payload with msgspec into vLLM's own structs for
LAYOUT (`legacy` or `current`, declared in make_fixtures.py as vLLM declares them; the decoder is
strict: a field of the wrong type, a missing field or a wrong tag fails). Then asks the replay socket
(DEALER, [b"", start]) for everything from 0, reads (b"", seq, payload) frames to the end marker
(seq -1, empty payload), decodes each, checks the sequence numbers run 0..N without a gap and that the
replayed bytes of the live sequence number equal the live payload. Prints one JSON line of counts and
OK, exits 0; prints the error and exits 1 otherwise.
"""

import json
import os
import sys

import msgspec
import zmq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_fixtures import LAYOUTS  # noqa: E402


def main() -> int:
    endpoint, replay_endpoint, topic, layout = sys.argv[1:5]
    batch_type, stored, removed, cleared = LAYOUTS[layout]
    decoder = msgspec.msgpack.Decoder(batch_type)
    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    sub.setsockopt_string(zmq.SUBSCRIBE, topic)
    sub.connect(endpoint)
    print("READY", flush=True)
    if not sub.poll(60_000):
        print("no live message within 60 s", flush=True)
        return 1
    frames = sub.recv_multipart()
    if len(frames) != 3 or len(frames[1]) != 8:
        print(f"expected 3 frames with an 8-byte sequence, got {[len(f) for f in frames]}", flush=True)
        return 1
    if frames[0].decode() != topic:
        print(f"topic {frames[0]!r} != {topic!r}", flush=True)
        return 1
    live_seq = int.from_bytes(frames[1], "big")
    live = decoder.decode(frames[2])
    print(json.dumps({"live_seq": live_seq, "live_events": len(live.events)}), flush=True)

    dealer = ctx.socket(zmq.DEALER)
    dealer.setsockopt(zmq.LINGER, 0)
    dealer.connect(replay_endpoint)
    dealer.send_multipart([b"", (0).to_bytes(8, "big")])
    seqs, counts, payloads = [], {"BlockStored": 0, "BlockRemoved": 0, "AllBlocksCleared": 0}, {}
    while True:
        if not dealer.poll(30_000):
            print("replay: no end marker within 30 s", flush=True)
            return 1
        empty, seq_bytes, payload = dealer.recv_multipart()
        if empty != b"":
            print("replay: missing empty delimiter", flush=True)
            return 1
        seq = int.from_bytes(seq_bytes, "big", signed=True)
        if seq == -1:
            if payload != b"":
                print("replay: end marker with a payload", flush=True)
                return 1
            break
        batch = decoder.decode(payload)
        if batch.data_parallel_rank != 0:
            print(f"data_parallel_rank {batch.data_parallel_rank}", flush=True)
            return 1
        for e in batch.events:
            counts[type(e).__name__.replace("Legacy", "").replace("Cur", "")] += 1
            if isinstance(e, stored) and len(e.token_ids) != len(e.block_hashes) * e.block_size:
                print(f"BlockStored with {len(e.token_ids)} tokens for {len(e.block_hashes)} blocks", flush=True)
                return 1
        seqs.append(seq)
        payloads[seq] = payload
    if seqs != list(range(len(seqs))) or live_seq not in payloads:
        print(f"replayed sequence numbers {seqs[:5]}..{seqs[-5:]} (live {live_seq})", flush=True)
        return 1
    if payloads[live_seq] != frames[2]:
        print(f"replayed payload of {live_seq} differs from the live one", flush=True)
        return 1
    print(json.dumps({"replayed": len(seqs), **counts}), flush=True)
    print("OK", flush=True)
    ctx.destroy(linger=0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
