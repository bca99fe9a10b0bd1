#!/usr/bin/env python3
"""Writes small synthetic graph JSON seeds for fuzz_graph_json into DIR (argv[1])."""
import json
import os
import sys

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
seeds = {
    "empty": {"nodes": []},
    "loop": {"inputs": ["x"], "outputs": ["y"], "nodes": [
        {"type": "previous", "inputs": ["y"], "outputs": ["p"]},
        {"type": "merge", "inputs": ["x", "p"], "outputs": ["y"]}]},
    "control": {"inputs": ["x", {"name": "sel", "type": "int"}, "ok"], "outputs": ["j", "g"],
                "side_params": {"inv": True},
                "nodes": [
                    {"type": "switch", "inputs": ["sel", "x"], "outputs": ["a", "b"]},
                    {"type": "merge", "inputs": ["a", "b"], "outputs": ["j"]},
                    {"type": "has_packet", "inputs": ["ok"], "outputs": ["h"]},
                    {"type": "gate", "inputs": ["x", "h"], "outputs": ["g"],
                     "options": {"invert": "$inv"}},
                    {"type": "flow_limiter", "inputs": ["x", "g"], "outputs": ["f"],
                     "options": {"max_in_flight": 1}}]},
    "foreach": {"inputs": ["l"], "outputs": ["o"], "nodes": [
        {"type": "split", "inputs": ["l"], "outputs": ["items"]},
        {"type": "foreach", "inputs": ["items"], "outputs": ["o"],
         "options": {"graph": {"inputs": ["i"], "outputs": ["i"], "nodes": []}}}]},
    "vision": {"inputs": [{"name": "image", "type": "image"}], "outputs": ["t"], "nodes": [
        {"type": "image_to_tensor", "inputs": ["image"], "outputs": ["t", "m"],
         "options": {"width": 16, "height": 16, "range": [-1, 1], "keep_aspect": True}}]},
    "cycle": {"inputs": ["x"], "nodes": [
        {"type": "merge", "name": "a", "inputs": ["x", "b"], "outputs": ["a"]},
        {"type": "merge", "name": "b", "inputs": ["a"], "outputs": ["b"]}]},
}
for name, doc in seeds.items():
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump(doc, f)
