;; A plugin built as a WASI command, not a reactor: it exports _start (never called by the host) and no
;; _initialize, and its exports trap because the start-up code they need has not run. The host's load error names
;; the fix.
;; Rebuild: scripts/wasm.d/10-go-plugins.sh (wat2wasm). Sources of the plugin host's ABI edge-case tests.
(module
  (memory (export "memory") 2)
  (global $started (mut i32) (i32.const 0))
  (func (export "_start") (global.set $started (i32.const 1)))
  (func (export "agentrt_abi_version") (result i32)
    (if (i32.eqz (global.get $started)) (then unreachable))
    (i32.const 1))
  (func (export "agentrt_alloc") (param $size i32) (result i32) (i32.const 4096))
  (func (export "agentrt_free") (param $ptr i32))
  (func (export "agentrt_describe") (result i64) unreachable)
  (func (export "agentrt_init") (param $ptr i32) (param $len i32) (result i64) unreachable)
  (func (export "agentrt_call") (param $ptr i32) (param $len i32) (result i64) unreachable)
)
