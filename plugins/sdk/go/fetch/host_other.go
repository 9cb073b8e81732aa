//go:build !wasip1

package fetch

import "errors"

// Outside a Wasm guest there is no runtime to ask.
func call([]byte) ([]byte, error) {
	return nil, errors.New("fetch: outbound HTTP works only inside a Wasm plugin (GOOS=wasip1)")
}
