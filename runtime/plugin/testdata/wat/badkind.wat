;; A plugin whose manifest declares an unknown kind.
;; Rebuild: scripts/wasm.d/10-go-plugins.sh (wat2wasm). Sources of the plugin host's ABI edge-case tests.
(module
  (import "agentrt_v1" "log" (func $log (param i32 i32 i32)))
  (memory (export "memory") 2)
  (data (i32.const 16) "{\"abi_version\":1,\"kind\":\"widget\",\"name\":\"w\"}")
  (data (i32.const 1024) "{\"ok\":{}}")
  (data (i32.const 1100) "{\"ok\":{\"text\":\"ok\"}}")
  (func (export "agentrt_abi_version") (result i32) (i32.const 1))
  ;; one input buffer at 4096 (inputs up to 124 KiB)
  (func (export "agentrt_alloc") (param $size i32) (result i32) (i32.const 4096))
  (func (export "agentrt_free") (param $ptr i32))
  (func (export "agentrt_describe") (result i64) (i64.or (i64.shl (i64.const 16) (i64.const 32)) (i64.const 44)))
  (func (export "agentrt_init") (param $ptr i32) (param $len i32) (result i64) (i64.or (i64.shl (i64.const 1024) (i64.const 32)) (i64.const 9)))
  (func (export "agentrt_call") (param $ptr i32) (param $len i32) (result i64)
    (i64.or (i64.shl (i64.const 1100) (i64.const 32)) (i64.const 20)))
)
