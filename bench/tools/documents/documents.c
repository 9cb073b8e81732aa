/* documents: the long-horizon benchmark's tool (bench/long_horizon.sh), written with agentrt's C SDK (plugins/sdk/c).
 * read_document(id, bytes) returns `bytes` bytes of deterministic English-like text made from id, so a scripted
 * model can ask for tool outputs of any size and two systems get byte-identical results. bench/strands_driver.py
 * has the same generator in Python (doc_text); bench/long_horizon_test.py holds them equal.
 * Built by scripts/wasm.d/40-bench-tools.sh into documents.wasm next to this file. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agentrt.h"

#define MAX_BYTES 65536

static const char schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"id\":{\"type\":\"string\",\"description\":\"The document to read.\"},"
    "\"bytes\":{\"type\":\"integer\",\"description\":\"How many bytes of it to return (1 to 65536).\"}},"
    "\"required\":[\"id\",\"bytes\"]}";

static const char *const words[32] = {
    "the",    "model", "reads",  "a",      "long",    "document", "about", "tokens", "and",  "cache",  "each",
    "turn",   "adds",  "new",    "context", "to",     "prefix",   "server", "request", "batch", "reply", "tool",
    "result", "grows", "with",   "every",  "step",    "of",       "agent",  "loop",   "data", "line"};

/* doc_text writes n bytes of text for id into out: words drawn by an LCG seeded with FNV-1a 64 of id, a space
 * between words and a newline after every twelfth; the last byte is never white space. */
static void doc_text(const char *id, size_t idlen, char *out, size_t n) {
  uint64_t h = 14695981039346656037ull;
  for (size_t i = 0; i < idlen; i++) {
    h ^= (unsigned char)id[i];
    h *= 1099511628211ull;
  }
  size_t k = 0, count = 0;
  while (k < n) {
    h = h * 6364136223846793005ull + 1442695040888963407ull;
    const char *w = words[(h >> 33) % 32];
    for (size_t j = 0; w[j] && k < n; j++) out[k++] = w[j];
    count++;
    if (k < n) out[k++] = count % 12 == 0 ? '\n' : ' ';
  }
  if (n > 0 && (out[n - 1] == ' ' || out[n - 1] == '\n')) out[n - 1] = '.';
}

static void read_document(const agentrt_tool_call *call, agentrt_result *r) {
  size_t idlen;
  const char *id = agentrt_json_str(agentrt_json_get(call->arguments, "id"), &idlen);
  double b;
  if (!id) {
    agentrt_result_error(r, "bad_input", "read_document: argument \"id\" must be a string");
    return;
  }
  if (!agentrt_json_num(agentrt_json_get(call->arguments, "bytes"), &b) || b != (double)(int64_t)b || b < 1 ||
      b > MAX_BYTES) {
    agentrt_result_error(r, "bad_input", "read_document: argument \"bytes\" must be an integer from 1 to %d", MAX_BYTES);
    return;
  }
  size_t n = (size_t)b;
  char *out = malloc(n);
  if (!out) {
    agentrt_result_error(r, "internal", "out of memory");
    return;
  }
  doc_text(id, idlen, out, n);
  agentrt_result_text(r, out, n);
  free(out);
}

void agentrt_plugin(void) {
  agentrt_declare("tool", "documents", "1.0.0", "Deterministic documents of any size (long-horizon benchmark).");
  agentrt_tool("read_document", "Read a document: returns its first `bytes` bytes of text.", schema, read_document);
}
