;; A tool that logs 10000 lines on every call: the host keeps the first MaxLogLinesPerCall and counts the rest.
;; Rebuild: scripts/wasm.d/10-go-plugins.sh (wat2wasm).
(module
  (import "agentrt_v1" "log" (func $log (param i32 i32 i32)))
  (memory (export "memory") 2)
  (data (i32.const 16) "{\"abi_version\":1,\"kind\":\"tool\",\"name\":\"flood\",\"tools\":[{\"name\":\"noop\",\"parameters\":{\"type\":\"object\"}}]}")
  (data (i32.const 1024) "{\"ok\":{}}")
  (data (i32.const 1100) "{\"ok\":{\"text\":\"ok\"}}")
  (data (i32.const 2000) "flooding the log")
  (func (export "agentrt_abi_version") (result i32) (i32.const 1))
  (func (export "agentrt_alloc") (param $size i32) (result i32) (i32.const 4096))
  (func (export "agentrt_free") (param $ptr i32))
  (func (export "agentrt_describe") (result i64) (i64.or (i64.shl (i64.const 16) (i64.const 32)) (i64.const 103)))
  (func (export "agentrt_init") (param $ptr i32) (param $len i32) (result i64) (i64.or (i64.shl (i64.const 1024) (i64.const 32)) (i64.const 9)))
  (func (export "agentrt_call") (param $ptr i32) (param $len i32) (result i64)
    (local $i i32)
    (loop $again
      (call $log (i32.const 1) (i32.const 2000) (i32.const 16))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $again (i32.lt_u (local.get $i) (i32.const 10000))))
    (i64.or (i64.shl (i64.const 1100) (i64.const 32)) (i64.const 20)))
)
