package plugin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/agentrt/agentrt/plugins/sdk/abi"
)

// Inspection is what `agentrt plugin inspect` shows about a module binary.
type Inspection struct {
	SHA256     string        `json:"sha256"`
	Size       int           `json:"size"`
	Imports    []string      `json:"imports"` // "module.name (params)->results"
	Exports    []string      `json:"exports"` // "name (params)->results", and "memory (memory)"
	ABIVersion int32         `json:"abi_version,omitempty"`
	Manifest   *abi.Manifest `json:"manifest,omitempty"`
}

// Inspect compiles a module (sandboxed), lists its imports and exports, and, when its shape is valid, instantiates
// it once to read its ABI version and manifest, without calling agentrt_init (so no config is needed). On an
// error it returns what it could learn so far together with the error.
//
// # Errors
//
// The *LoadError, *TrapError or *TimeoutError that Load would report for the same problem.
func (h *Host) Inspect(ctx context.Context, name string, wasm []byte) (*Inspection, error) {
	sum := sha256.Sum256(wasm)
	ins := &Inspection{SHA256: hex.EncodeToString(sum[:]), Size: len(wasm)}
	lim := Limits{}.withDefaults(false)
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return ins, ErrClosed
	}
	e, err := h.runtime(ctx, false, uint32(lim.MaxMemoryMB*16))
	if err != nil {
		h.mu.Unlock()
		return ins, err
	}
	cm, err := h.compile(ctx, e, sum, wasm)
	h.mu.Unlock()
	if err != nil {
		return ins, &LoadError{Plugin: name, Reason: "not a valid WebAssembly module", Err: err}
	}
	for _, d := range cm.ImportedFunctions() {
		mod, fn, _ := d.Import()
		ins.Imports = append(ins.Imports, fmt.Sprintf("%s.%s %s", mod, fn, signature(d.ParamTypes(), d.ResultTypes())))
	}
	for n, d := range cm.ExportedFunctions() {
		ins.Exports = append(ins.Exports, fmt.Sprintf("%s %s", n, signature(d.ParamTypes(), d.ResultTypes())))
	}
	for n := range cm.ExportedMemories() {
		ins.Exports = append(ins.Exports, n+" (memory)")
	}
	sort.Strings(ins.Imports)
	sort.Strings(ins.Exports)
	if err := checkShape(name, cm); err != nil {
		return ins, err
	}
	m := &Module{host: h, rt: e.r, cm: cm, mc: sandboxModuleConfig(), name: name, label: name, sha: ins.SHA256, lim: lim}
	in, err := m.instantiate(ctx)
	if err != nil {
		return ins, err
	}
	defer m.closeInstance(ctx, in)
	cctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	res, err := in.mod.ExportedFunction(abi.FuncABIVersion).Call(cctx)
	if err != nil {
		return ins, m.callError(abi.FuncABIVersion, in, err)
	}
	ins.ABIVersion = int32(res[0])
	if ins.ABIVersion != abi.Version {
		return ins, &LoadError{Plugin: name, Reason: fmt.Sprintf("was built for ABI version %d; this agentrt speaks version %d", ins.ABIVersion, abi.Version)}
	}
	res, err = in.mod.ExportedFunction(abi.FuncDescribe).Call(cctx)
	if err != nil {
		return ins, m.callError(abi.FuncDescribe, in, err)
	}
	out, err := m.readOutput(abi.FuncDescribe, in, res[0])
	if err != nil {
		return ins, &LoadError{Plugin: name, Reason: "bad manifest", Err: err}
	}
	var mf abi.Manifest
	if err := json.Unmarshal(out, &mf); err != nil {
		return ins, &LoadError{Plugin: name, Reason: "agentrt_describe returned invalid JSON", Err: err}
	}
	ins.Manifest = &mf
	return ins, m.setManifest(out)
}
