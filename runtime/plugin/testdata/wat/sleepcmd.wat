;; A WASI command (not an ABI plugin) that sleeps for an hour through poll_oneoff's clock subscription: the
;; command-tool tests check that its time limit still stops it when the clock is granted.
(module
  (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "_start")
    ;; subscription at 0 (48 bytes): userdata 0, tag 0 (clock), clock id 1 (monotonic) at 16, timeout at 24
    (i32.store (i32.const 16) (i32.const 1))
    (i64.store (i32.const 24) (i64.const 3600000000000))
    (drop (call $poll (i32.const 0) (i32.const 64) (i32.const 1) (i32.const 128)))
    ;; then spin, as a program that sleeps in a loop would
    (loop $again (br $again))))
