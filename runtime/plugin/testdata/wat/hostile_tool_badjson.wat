;; A hostile tool plugin that returns output that is not JSON: a case of runtime/hostile_test.go.
;; Rebuild: scripts/wasm.d/10-go-plugins.sh (wat2wasm).
(module
  (memory (export "memory") 2)
  (data (i32.const 16) "{\"abi_version\":1,\"kind\":\"tool\",\"name\":\"hostile\",\"tools\":[{\"name\":\"hostile\",\"parameters\":{\"type\":\"object\"}}]}")
  (data (i32.const 1024) "{\"ok\":{}}")
  (data (i32.const 1100) "{\"ok\":{\"text\":\"ok\"}}")
  (data (i32.const 3000) "not json at all")
  (func (export "agentrt_abi_version") (result i32) (i32.const 1))
  (func (export "agentrt_alloc") (param $size i32) (result i32) (i32.const 4096))
  (func (export "agentrt_free") (param $ptr i32))
  (func (export "agentrt_describe") (result i64) (i64.or (i64.shl (i64.const 16) (i64.const 32)) (i64.const 108)))
  (func (export "agentrt_init") (param $ptr i32) (param $len i32) (result i64) (i64.or (i64.shl (i64.const 1024) (i64.const 32)) (i64.const 9)))
  (func (export "agentrt_call") (param $ptr i32) (param $len i32) (result i64)
    (i64.or (i64.shl (i64.const 3000) (i64.const 32)) (i64.const 12)))
)
