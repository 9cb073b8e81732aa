// word_count: an example tool plugin written with agentrt's AssemblyScript SDK (plugins/sdk/assemblyscript).
// Counts the words, lines and characters of a text and lists its most frequent words.
// Built by scripts/wasm.d/30-sdk-examples.sh into ../word_count.wasm.

import { Manifest, Result, Tool, ToolCall, ToolSpec, Value, register } from "agentrt/assembly/index";

class WordCount extends Tool {
  manifest(): Manifest {
    return new Manifest("word_count", "1.0.0", "Text statistics (AssemblyScript SDK example).").tool(
      new ToolSpec(
        "word_count",
        "Count the words, lines and characters of a text; list the `top` most frequent words (default 3).",
        '{"type":"object","properties":{"text":{"type":"string"},"top":{"type":"integer","minimum":0}},"required":["text"]}',
      ),
    );
  }

  call(call: ToolCall): Result {
    const text = call.str("text");
    if (text == null) return Result.badInput('word_count: argument "text" must be a string');
    let top = 3;
    if (call.arguments.get("top") != null) {
      const t = call.num("top");
      if (isNaN(t) || t < 0 || t != Math.trunc(t)) return Result.badInput('word_count: argument "top" must be an integer >= 0');
      top = <i32>t;
    }
    const counts = new Map<string, i32>();
    const order = new Array<string>(); // first-seen order, for a deterministic tie-break
    let words = 0;
    let lines = text.length > 0 ? 1 : 0;
    let chars = 0;
    let start = -1;
    for (let i = 0; i <= text.length; i++) {
      const c = i < text.length ? text.charCodeAt(i) : 0x20;
      if (i < text.length && (c & 0xfc00) != 0xdc00) chars++; // code points: skip low surrogates
      if (c == 0x0a && i < text.length - 1) lines++;
      const space = c == 0x20 || c == 0x09 || c == 0x0a || c == 0x0d;
      if (!space && start < 0) start = i;
      if (space && start >= 0) {
        const w = text.substring(start, i).toLowerCase();
        words++;
        if (counts.has(w)) counts.set(w, counts.get(w) + 1);
        else {
          counts.set(w, 1);
          order.push(w);
        }
        start = -1;
      }
    }
    // Most frequent first; equal counts keep first-seen order (a stable insertion sort).
    const sorted = order.slice(0);
    for (let i = 1; i < sorted.length; i++) {
      const w = sorted[i];
      let j = i - 1;
      while (j >= 0 && counts.get(sorted[j]) < counts.get(w)) {
        sorted[j + 1] = sorted[j];
        j--;
      }
      sorted[j + 1] = w;
    }
    const topList = Value.array();
    for (let i = 0; i < sorted.length && i < top; i++) {
      topList.push(Value.object().set("word", Value.string(sorted[i])).set("count", Value.number(counts.get(sorted[i]))));
    }
    return Result.json(
      Value.object()
        .set("words", Value.number(words))
        .set("lines", Value.number(lines))
        .set("chars", Value.number(chars))
        .set("top", topList),
    );
  }
}

register(new WordCount());

export * from "agentrt/assembly/exports";
