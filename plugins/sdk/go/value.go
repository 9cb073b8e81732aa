package sdk

import (
	"github.com/agentrt/agentrt/plugins/sdk/abi"
	"github.com/agentrt/agentrt/plugins/sdk/go/fastjson"
)

// RawJSON is an already-encoded JSON value.
type RawJSON = abi.RawJSON

// ToolSpec describes one tool: its name, a description for the model and the JSON Schema of its arguments.
type ToolSpec = abi.ToolSpec

// Value is a raw JSON value from the host (config, arguments, events). It is decoded lazily: methods scan only
// what they are asked for. An absent value is nil. A Value handed to a handler is valid only during that call;
// copy what must outlive it (strings returned by Str are copies).
type Value []byte

// Exists reports whether v is present (not nil and not only whitespace).
func (v Value) Exists() bool { return len(fastjson.SkipWSBytes(v)) > 0 }

// IsNull reports whether v is absent or the literal null.
func (v Value) IsNull() bool { return fastjson.IsNull(v) }

// IsObject reports whether v is a JSON object (checked whole).
func (v Value) IsObject() bool { return fastjson.IsObject(v) }

// Get returns the member key of the object v, or nil when v is not an object or has no such key.
func (v Value) Get(key string) Value {
	r, err := fastjson.Get(v, key)
	if err != nil {
		return nil
	}
	return Value(r)
}

// Str decodes v as a string.
func (v Value) Str() (string, error) { return fastjson.String(v) }

// StrOr decodes v as a string, or returns def when v is absent, null or not a string.
func (v Value) StrOr(def string) string {
	s, err := fastjson.String(v)
	if err != nil {
		return def
	}
	return s
}

// Int decodes v as an integer.
func (v Value) Int() (int64, error) { return fastjson.Int(v) }

// IntOr decodes v as an integer, or returns def when v is absent, null or not an integer.
func (v Value) IntOr(def int64) int64 {
	n, err := fastjson.Int(v)
	if err != nil {
		return def
	}
	return n
}

// Float decodes v as a number.
func (v Value) Float() (float64, error) { return fastjson.Float(v) }

// Bool decodes v as true or false.
func (v Value) Bool() (bool, error) { return fastjson.Bool(v) }

// Each calls fn for each member of the object v (key decoded); it stops when fn returns false.
func (v Value) Each(fn func(key string, val Value) bool) error {
	var kerr error
	err := fastjson.Each(v, func(k, val []byte) bool {
		ks, err := fastjson.Unquote(k)
		if err != nil {
			kerr = err
			return false
		}
		return fn(ks, Value(val))
	})
	if err != nil {
		return err
	}
	return kerr
}

// Elems calls fn for each element of the array v; it stops when fn returns false.
func (v Value) Elems(fn func(val Value) bool) error {
	return fastjson.EachElem(v, func(val []byte) bool { return fn(Value(val)) })
}

// Raw returns the undecoded bytes.
func (v Value) Raw() []byte { return v }
