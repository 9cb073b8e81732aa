/*
 * agentrt.h: the C guest SDK of agentrt's plugin ABI version 1 (plugins/ABI.md).
 *
 * Link agentrt.c into your module and define agentrt_plugin(), which declares the plugin: its kind, name and
 * handlers. The SDK implements every export of the ABI (agentrt_abi_version, agentrt_alloc, agentrt_free,
 * agentrt_describe, agentrt_init, agentrt_call), builds the manifest and the envelopes, and hands your handlers
 * parsed inputs and a result to fill in.
 *
 *   clang-14 --target=wasm32-wasi --sysroot=/usr -O2 -mexec-model=reactor -Wl,--strip-all \
 *       -I plugins/sdk/c -o my_tool.wasm my_tool.c plugins/sdk/c/agentrt.c
 *
 * Memory: strings returned by the SDK (agentrt_json_str, call->id, ...) live until the handler returns; copy what
 * you keep. Do not keep per-episode state in globals: the host pools instances (ABI.md section 2).
 */
#ifndef AGENTRT_H
#define AGENTRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- JSON values (read-only views into the input; no copies) ---- */

typedef enum {
  AGENTRT_JSON_INVALID = 0, /* absent, or not well-formed */
  AGENTRT_JSON_NULL,
  AGENTRT_JSON_BOOL,
  AGENTRT_JSON_NUMBER,
  AGENTRT_JSON_STRING,
  AGENTRT_JSON_ARRAY,
  AGENTRT_JSON_OBJECT
} agentrt_json_type;

/* agentrt_json is one JSON value: ptr/len span its encoded text. A zero value (ptr == NULL) is "absent". */
typedef struct {
  const char *ptr;
  size_t len;
} agentrt_json;

/* agentrt_json_parse checks that [text, text+len) is exactly one well-formed JSON value and returns it; the zero
 * value if it is not. */
agentrt_json agentrt_json_parse(const char *text, size_t len);
agentrt_json_type agentrt_json_kind(agentrt_json v);
/* agentrt_json_get returns the member key of object v; the zero value if v is not an object or has no such key. */
agentrt_json agentrt_json_get(agentrt_json v, const char *key);
/* agentrt_json_count returns the number of elements of an array (members of an object); 0 otherwise. */
size_t agentrt_json_count(agentrt_json v);
/* agentrt_json_at returns element i of array v (the value of member i of an object); the zero value if out of
 * range. */
agentrt_json agentrt_json_at(agentrt_json v, size_t i);
/* agentrt_json_key returns the decoded key of member i of object v (NUL-terminated, valid until the handler
 * returns) and its length via len (may be NULL); NULL if v is not an object or i is out of range. */
const char *agentrt_json_key(agentrt_json v, size_t i, size_t *len);
/* agentrt_json_str returns the decoded, NUL-terminated string (valid until the handler returns) and its length in
 * bytes via len (may be NULL); NULL if v is not a string. */
const char *agentrt_json_str(agentrt_json v, size_t *len);
/* agentrt_json_num stores the number v in *out and returns 1; 0 if v is not a number. */
int agentrt_json_num(agentrt_json v, double *out);
/* agentrt_json_bool stores the boolean v (0 or 1) in *out and returns 1; 0 if v is not a boolean. */
int agentrt_json_bool(agentrt_json v, int *out);

/* ---- JSON writer ---- */

#define AGENTRT_MAX_DEPTH 64

typedef struct {
  char *buf;
  size_t len, cap;
  unsigned depth;
  unsigned char first[AGENTRT_MAX_DEPTH + 1]; /* per level: nothing written yet */
  int after_key;
  int bad; /* out of memory or misuse; the SDK turns it into an "internal" error envelope */
} agentrt_writer;

void agentrt_w_object(agentrt_writer *w);     /* { */
void agentrt_w_object_end(agentrt_writer *w); /* } */
void agentrt_w_array(agentrt_writer *w);      /* [ */
void agentrt_w_array_end(agentrt_writer *w);  /* ] */
void agentrt_w_key(agentrt_writer *w, const char *key);
void agentrt_w_string(agentrt_writer *w, const char *s);
void agentrt_w_stringn(agentrt_writer *w, const char *s, size_t n);
void agentrt_w_number(agentrt_writer *w, double v); /* NaN and infinities are written as null */
void agentrt_w_int(agentrt_writer *w, int64_t v);
void agentrt_w_bool(agentrt_writer *w, int v);
void agentrt_w_null(agentrt_writer *w);
void agentrt_w_raw(agentrt_writer *w, agentrt_json v); /* an existing JSON value, verbatim */

/* ---- results ---- */

/* agentrt_result is what a handler fills in: at most one of text, json, error (the last call wins). Left empty,
 * a tool returns {"text": ""} and a hook {} ("carry on"). */
typedef struct agentrt_result agentrt_result;

/* agentrt_result_text sets a tool's result to the n bytes at s, which it copies: s may be freed or reused at once. */
void agentrt_result_text(agentrt_result *r, const char *s, size_t n);
/* agentrt_result_json starts a JSON result and returns the writer to write exactly one value with: a tool's
 * {"json": value}, a parser's ParseResult object. */
agentrt_writer *agentrt_result_json(agentrt_result *r);
/* agentrt_result_error sets an error envelope: code is short snake_case ("bad_input"), the message printf-style. */
void agentrt_result_error(agentrt_result *r, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Hook responses (ABI.md section 5.3); each sets one field of the HookResponse. */
void agentrt_hook_stop(agentrt_result *r, const char *reason, const char *message);
void agentrt_hook_cancel_tool(agentrt_result *r, const char *message);
void agentrt_hook_reward(agentrt_result *r, double reward);
void agentrt_hook_metric(agentrt_result *r, const char *name, double value); /* up to 32 metrics */
/* agentrt_hook_state returns a writer for the state value the runtime hands back on this episode's next event. */
agentrt_writer *agentrt_hook_state(agentrt_result *r);

/* ---- handlers ---- */

typedef struct {
  const char *id;         /* may be "" */
  const char *name;       /* one of the module's tools */
  agentrt_json arguments; /* a JSON object */
} agentrt_tool_call;

typedef struct {
  const char *event;      /* "episode_end", ... */
  const char *episode_id;
  int64_t turn;
  agentrt_json raw;       /* the whole event object: counts, state, message, tool_call, ... */
} agentrt_event;

typedef void (*agentrt_tool_fn)(const agentrt_tool_call *call, agentrt_result *r);
typedef void (*agentrt_hook_fn)(const agentrt_event *ev, agentrt_result *r);
typedef void (*agentrt_parser_fn)(const char *text, size_t len, agentrt_result *r);
/* agentrt_init_fn receives the plugin's config (JSON null when there is none); an error refuses the config. */
typedef void (*agentrt_init_fn)(agentrt_json config, agentrt_result *r);

/* ---- declaring the plugin: call these from agentrt_plugin() ---- */

/* agentrt_plugin is defined by the plugin; the SDK calls it once, before it answers the first export. */
void agentrt_plugin(void);

/* kind: "tool", "hook" or "parser"; version and description may be NULL. */
void agentrt_declare(const char *kind, const char *name, const char *version, const char *description);
/* parameters_schema: the JSON Schema of the arguments object, as JSON text. Up to 32 tools. */
void agentrt_tool(const char *name, const char *description, const char *parameters_schema, agentrt_tool_fn fn);
/* agentrt_on subscribes fn to a hook event ("episode_end", ...). Up to 16 events. */
void agentrt_on(const char *event, agentrt_hook_fn fn);
/* agentrt_message_role limits message_added to messages of this role ("system", "user", "assistant", "tool"); call it
 * once per role wanted (up to 4). Without it every message_added reaches the hook; with it the host skips the others
 * without calling the plugin (ABI.md section 4.1, message_roles). */
void agentrt_message_role(const char *role);
void agentrt_parser(agentrt_parser_fn fn);
void agentrt_on_init(agentrt_init_fn fn);
/* agentrt_init_tools returns, while the init function runs, the agent's tool specs: a JSON array of {"name",
 * "description", "parameters"} for a parser (to check names and arguments), [] for other kinds. It is a view into
 * the init input: copy what you keep. */
agentrt_json agentrt_init_tools(void);
/* agentrt_config_schema documents the accepted config (JSON Schema text). */
void agentrt_config_schema(const char *schema);

/* ---- logging (host import agentrt_v1.log) ---- */

enum { AGENTRT_LOG_DEBUG = 0, AGENTRT_LOG_INFO = 1, AGENTRT_LOG_WARN = 2, AGENTRT_LOG_ERROR = 3 };
void agentrt_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#ifdef __cplusplus
}
#endif
#endif /* AGENTRT_H */
