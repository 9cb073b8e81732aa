package tito

/*
#cgo LDFLAGS: -ltokenizers -ldl -lm -lstdc++
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

// The C ABI of github.com/daulet/tokenizers v1.22.1 (its tokenizers.h), built by scripts/setup.d/10-tokenizers.sh
// into $AGENTRT_CACHE/lib/libtokenizers.a. We bind it directly rather than importing the module's Go package,
// because that package imports net/http (FromPretrained), which tito must never reach (STYLE.md, the house).
struct tokenizers_encode_options {
  bool add_special_token;
  bool return_type_ids;
  bool return_tokens;
  bool return_special_tokens_mask;
  bool return_attention_mask;
  bool return_offsets;
};
struct tokenizers_options {
  bool encode_special_tokens;
};
struct tokenizers_buffer {
  uint32_t *ids;
  uint32_t *type_ids;
  uint32_t *special_tokens_mask;
  uint32_t *attention_mask;
  char *tokens;
  size_t *offsets;
  uint32_t len;
};
void *tokenizers_from_bytes(const uint8_t *config, uint32_t len, const struct tokenizers_options *options, char **error);
struct tokenizers_buffer tokenizers_encode(void *ptr, const char *message, const struct tokenizers_encode_options *options);
char *tokenizers_decode(void *ptr, const uint32_t *ids, uint32_t len, bool skip_special_tokens);
uint32_t tokenizers_vocab_size(void *ptr);
void tokenizers_free_tokenizer(void *ptr);
void tokenizers_free_buffer(struct tokenizers_buffer buffer);
void tokenizers_free_string(char *string);

// Link-time check that the static library is the v1.22.1 build this binding was written against.
extern void tokenizers_version_1_22_1(void);
static void (*agentrt_tokenizers_version_check)(void) __attribute__((used)) = &tokenizers_version_1_22_1;

static struct tokenizers_buffer agentrt_encode(void *ptr, const char *message, bool add_special) {
  struct tokenizers_encode_options o = {0};
  o.add_special_token = add_special;
  return tokenizers_encode(ptr, message, &o);
}
*/
import "C"

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"

	"github.com/agentrt/agentrt/internal/jsonw"
)

// Tokenizer is a Hugging Face tokenizer (tokenizer.json) run by the Hugging Face Rust implementation through
// github.com/daulet/tokenizers. Special tokens that appear in text are matched as special tokens, as
// transformers does by default (split_special_tokens=False).
//
// A Tokenizer is safe for concurrent use: the Rust tokenizer is Sync and the calls only read it. Close must
// not be called while other calls are in flight; it waits for them, and any later call panics.
type Tokenizer struct {
	mu  sync.RWMutex
	ptr unsafe.Pointer // the Rust tokenizer; nil once closed

	addedIDs  map[string]int32 // added tokens by content
	special   map[int32]bool   // ids of added tokens marked special
	added     []AddedToken     // added tokens, in file order
	vocabSize int

	// The model vocabulary is parsed from tokenizer.json on first need (TokenID of a non-added token, the
	// NUL paths): building its maps is most of the Go-side cost of loading.
	vocabOnce sync.Once
	vocabRaw  json.RawMessage
	modelType string
	vocab     map[string]int32 // model vocabulary plus added tokens, in their tokenizer.json spelling
	tokens    []string         // id -> token (the inverse of vocab; "" for unused ids)
	sha256    string
	byteLevel *byteLevelTable // non-nil when the decoder is ByteLevel (GPT-2 byte mapping)
	// decoded is, for a ByteLevel decoder, what the library's decoder gives for each id alone, as bytes: Decode
	// concatenates them and converts the whole lossily, as the library does (in Go: a cgo call cost ~20 µs a
	// turn in the agent loop). Built with the vocabulary; decodedEnd[id] is where id's bytes end in decodedBytes.
	decodedBytes []byte
	decodedEnd   []uint32
	nulID        int32 // the id of the token for a lone U+0000, or -1
	// nulStandIns are control characters that behave exactly as U+0000 does in a byte-level tokenizer (the
	// pre-tokenizer classes them alike, and, like U+0000, each is a token that no merge touches), with their
	// token ids. Encode swaps U+0000 for one the text lacks, then swaps the ids back.
	nulStandIns []nulStandIn
}

// AddedToken is one entry of tokenizer.json's added_tokens: a token matched on raw text before the model runs.
type AddedToken struct {
	ID      int32  `json:"id"`
	Content string `json:"content"`
	Special bool   `json:"special"`
	// The matching flags of tokenizer.json: whether the token must be a whole word, absorbs whitespace to its
	// left or right, or is matched after normalization.
	SingleWord bool `json:"single_word"`
	LStrip     bool `json:"lstrip"`
	RStrip     bool `json:"rstrip"`
	Normalized bool `json:"normalized"`
}

// tokenizerFile is the part of tokenizer.json that Go reads itself (the Rust side reads all of it).
type tokenizerFile struct {
	AddedTokens []AddedToken `json:"added_tokens"`
	Decoder     *struct {
		Type     string `json:"type"`
		Decoders []struct {
			Type string `json:"type"`
		} `json:"decoders"`
	} `json:"decoder"`
	Model struct {
		Type  string          `json:"type"`
		Vocab json.RawMessage `json:"vocab"`
	} `json:"model"`
}

// LoadTokenizer reads a tokenizer.json file.
//
// # Errors
//
// The error wraps ErrModelFile and names the file when it is missing, unreadable, not JSON, or rejected by the
// Hugging Face library (whose message is included).
func LoadTokenizer(path string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrModelFile, path, err)
	}
	return newTokenizer(path, data)
}

func newTokenizer(path string, data []byte) (*Tokenizer, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: %s: empty file", ErrModelFile, path)
	}
	var tf tokenizerFile
	if err := json.Unmarshal(data, &tf); err != nil {
		return nil, fmt.Errorf("%w: %s: not a valid tokenizer.json: %w", ErrModelFile, path, err)
	}
	if len(tf.Model.Vocab) == 0 || string(tf.Model.Vocab) == "null" {
		return nil, fmt.Errorf("%w: %s: model.vocab: missing (model type %q)", ErrModelFile, path, tf.Model.Type)
	}
	// An empty vocabulary loads but decodes every token to "", which would complete trajectories with no text.
	if v := strings.Trim(strings.TrimSpace(string(tf.Model.Vocab)), "{}[] \t\r\n"); v == "" {
		return nil, fmt.Errorf("%w: %s: model.vocab is empty (model type %q)", ErrModelFile, path, tf.Model.Type)
	}
	addedIDs := make(map[string]int32, len(tf.AddedTokens))
	special := map[int32]bool{}
	for _, a := range tf.AddedTokens {
		addedIDs[a.Content] = a.ID
		if a.Special {
			special[a.ID] = true
		}
	}

	var cerr *C.char
	opts := C.struct_tokenizers_options{encode_special_tokens: false}
	ptr := C.tokenizers_from_bytes((*C.uint8_t)(unsafe.Pointer(&data[0])), C.uint32_t(len(data)), &opts, &cerr)
	if ptr == nil {
		msg := "rejected by the tokenizers library"
		if cerr != nil {
			msg = C.GoString(cerr)
			C.tokenizers_free_string(cerr)
		}
		return nil, fmt.Errorf("%w: %s: %s", ErrModelFile, path, msg)
	}
	sum := sha256.Sum256(data)
	t := &Tokenizer{
		ptr:       ptr,
		addedIDs:  addedIDs,
		special:   special,
		added:     tf.AddedTokens,
		vocabRaw:  tf.Model.Vocab,
		modelType: tf.Model.Type,
		vocabSize: int(C.tokenizers_vocab_size(ptr)),
		sha256:    hex.EncodeToString(sum[:]),
		nulID:     -1,
	}
	if d := tf.Decoder; d != nil {
		if d.Type == "ByteLevel" || (d.Type == "Sequence" && len(d.Decoders) == 1 && d.Decoders[0].Type == "ByteLevel") {
			t.byteLevel = newByteLevelTable()
		}
	}
	return t, nil
}

// parseVocab reads model.vocab: a {token: id} object (BPE, WordPiece, WordLevel) or a [[token, score], ...]
// list (Unigram, where the id is the position).
func parseVocab(modelType string, raw json.RawMessage) (map[string]int32, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, fmt.Errorf("missing (model type %q)", modelType)
	}
	if raw[0] == '{' {
		if m, ok := scanVocab(raw); ok {
			return m, nil
		}
		var m map[string]int32
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
		return m, nil
	}
	var list [][2]json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, err
	}
	m := make(map[string]int32, len(list))
	for i, e := range list {
		var s string
		if err := json.Unmarshal(e[0], &s); err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		m[s] = int32(i)
	}
	return m, nil
}

// scanVocab reads a vocabulary object ({"token": id, ...}) as encoding/json would into a map[string]int32 (the
// last of duplicate keys wins), without its reflection: ~2x faster on Qwen3's 151k tokens (~50 ms against ~100). ok is false for
// anything else (json.Unmarshal then reports it).
func scanVocab(raw []byte) (m map[string]int32, ok bool) {
	ws := func(i int) int {
		for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
			i++
		}
		return i
	}
	i := ws(0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, false
	}
	m = make(map[string]int32, bytes.Count(raw, []byte{':'}))
	if i = ws(i + 1); i < len(raw) && raw[i] == '}' {
		return m, ws(i+1) == len(raw)
	}
	for {
		key, n, ok := jsonw.Unquote(raw[i:])
		if !ok {
			return nil, false
		}
		if i = ws(i + n); i >= len(raw) || raw[i] != ':' {
			return nil, false
		}
		i = ws(i + 1)
		end, integer, ok := jsonw.NumberEnd(raw, i)
		if !ok || !integer {
			return nil, false
		}
		id, err := strconv.ParseInt(string(raw[i:end]), 10, 32)
		if err != nil {
			return nil, false
		}
		m[key] = int32(id)
		if i = ws(end); i >= len(raw) {
			return nil, false
		}
		switch raw[i] {
		case ',':
			i = ws(i + 1)
		case '}':
			return m, ws(i+1) == len(raw)
		default:
			return nil, false
		}
	}
}

// loadVocab parses the model vocabulary on first need, and finds the token of a lone U+0000 (the C ABI passes
// strings NUL-terminated, so text holding U+0000 takes a Go-side path in Encode and Decode). The library
// already accepted the file, so a vocabulary that does not parse here is left empty.
func (t *Tokenizer) loadVocab() {
	t.vocabOnce.Do(func() {
		vocab, err := parseVocab(t.modelType, t.vocabRaw)
		t.vocabRaw = nil
		if err != nil {
			vocab = map[string]int32{}
		}
		if t.byteLevel != nil && err == nil {
			t.buildDecoded(vocab)
		}
		for _, a := range t.added {
			vocab[a.Content] = a.ID
		}
		maxID := int32(-1)
		for _, id := range vocab {
			maxID = max(maxID, id)
		}
		t.tokens = make([]string, maxID+1)
		for tok, id := range vocab {
			if id >= 0 {
				t.tokens[id] = tok
			}
		}
		t.vocab = vocab
		nul := "<0x00>"
		if t.byteLevel != nil {
			nul = string(t.byteLevel.toRune[0])
		}
		if id, ok := vocab[nul]; ok {
			t.nulID = id
		}
		t.nulStandIns = t.findNULStandIns()
	})
}

// findNULStandIns returns the control characters that can stand in for U+0000 when encoding (see the field).
// It needs a byte-level tokenizer in which U+0000 itself is only ever a token of its own.
func (t *Tokenizer) findNULStandIns() []nulStandIn {
	if t.byteLevel == nil || t.nulID < 0 {
		return nil
	}
	// merged[b]: byte b's character appears inside a longer token, i.e. some merge involves it.
	var merged [32]bool
	for tok := range t.vocab {
		if len(tok) <= 2 { // one byte-level character (U+0100..U+0120 are two bytes in UTF-8)
			continue
		}
		for _, r := range tok {
			if b, ok := t.byteLevel.toByte[r]; ok && b < 32 {
				merged[b] = true
			}
		}
	}
	if merged[0] {
		return nil
	}
	var out []nulStandIn
	for b := 1; b < 0x1C; b++ { // U+001C..U+001F count as whitespace in some regex engines: leave them out
		if b == '\t' || b == '\n' || b == '\v' || b == '\f' || b == '\r' || merged[b] { // whitespace is classed apart
			continue
		}
		if id, ok := t.vocab[string(t.byteLevel.toRune[b])]; ok {
			out = append(out, nulStandIn{char: rune(b), id: id})
		}
	}
	return out
}

// SHA256 returns the hex sha256 of the tokenizer.json bytes this tokenizer was built from.
func (t *Tokenizer) SHA256() string { return t.sha256 }

// VocabSize returns the vocabulary size including added tokens (Hugging Face get_vocab_size(true), Python's
// len(tokenizer)).
func (t *Tokenizer) VocabSize() int { return t.vocabSize }

// TokenID returns the id of a token in its tokenizer.json spelling (for byte-level BPE, "Ġhello" rather than
// " hello"; added and special tokens as written, e.g. "<|im_end|>"), and whether it exists.
func (t *Tokenizer) TokenID(token string) (int32, bool) {
	if id, ok := t.addedIDs[token]; ok {
		return id, true
	}
	t.loadVocab()
	id, ok := t.vocab[token]
	return id, ok
}

// Token returns the token of id in its tokenizer.json spelling (Hugging Face's id_to_token: "Ġhello" for byte-level
// BPE, "▁hello" for SentencePiece, added tokens as written), and whether the vocabulary has one. It is TokenID's
// inverse; Decode gives the text.
func (t *Tokenizer) Token(id int32) (string, bool) {
	t.loadVocab()
	if id < 0 || int(id) >= len(t.tokens) || t.tokens[id] == "" {
		return "", false
	}
	return t.tokens[id], true
}

// IsSpecial reports whether id is an added token marked special (the tokens skip_special_tokens drops).
func (t *Tokenizer) IsSpecial(id int32) bool { return t.special[id] }

// AddedTokens returns tokenizer.json's added tokens (special and not), in file order. The slice is a copy.
func (t *Tokenizer) AddedTokens() []AddedToken {
	return append([]AddedToken(nil), t.added...)
}

func (t *Tokenizer) acquire() unsafe.Pointer {
	t.mu.RLock()
	if t.ptr == nil {
		t.mu.RUnlock()
		panic("tito: Tokenizer used after Close")
	}
	return t.ptr
}

// Encode tokenizes text. With addSpecialTokens false nothing is added (no BOS), as
// tokenizer.encode(text, add_special_tokens=False); special tokens written in the text are still matched.
//
// # Notes
//
// Invalid UTF-8 is replaced by U+FFFD first, one per maximal invalid sequence as Python's
// bytes.decode("utf-8", "replace") does (Python strings cannot hold invalid UTF-8). The C ABI passes text
// NUL-terminated, so U+0000 is swapped for a control character that the tokenizer treats identically and
// that the text lacks, and the ids swapped back (exact for byte-level BPE such as Qwen and Llama 3). Failing
// that, the pieces between NULs are encoded separately, which can differ from Python where the
// pre-tokenizer would have joined a NUL to its neighbours (the text round-trips either way). Encode panics if
// the Tokenizer is closed.
func (t *Tokenizer) Encode(text string, addSpecialTokens bool) []int32 {
	if strings.IndexByte(text, 0) >= 0 {
		return t.encodeWithNUL(text, addSpecialTokens)
	}
	return t.encode(text, addSpecialTokens)
}

func (t *Tokenizer) encode(text string, addSpecialTokens bool) []int32 {
	if !utf8.ValidString(text) {
		text = lossyUTF8([]byte(text))
	}
	ptr := t.acquire()
	defer t.mu.RUnlock()
	cs := C.CString(text)
	defer C.free(unsafe.Pointer(cs))
	buf := C.agentrt_encode(ptr, cs, C.bool(addSpecialTokens))
	defer C.tokenizers_free_buffer(buf)
	n := int(buf.len)
	out := make([]int32, n)
	if n > 0 {
		copy(out, unsafe.Slice((*int32)(unsafe.Pointer(buf.ids)), n))
	}
	return out
}

type nulStandIn struct {
	char rune
	id   int32
}

func (t *Tokenizer) encodeWithNUL(text string, addSpecialTokens bool) []int32 {
	t.loadVocab()
	for _, c := range t.nulStandIns {
		if strings.ContainsRune(text, c.char) {
			continue
		}
		ids := t.encode(strings.ReplaceAll(text, "\x00", string(c.char)), addSpecialTokens)
		for i, id := range ids {
			if id == c.id {
				ids[i] = t.nulID
			}
		}
		return ids
	}
	// No stand-in: encode the pieces between NULs. Exact unless the pre-tokenizer would have joined a NUL
	// with its neighbours (a whitespace run before it, punctuation around it).
	parts := strings.Split(text, "\x00")
	var out []int32
	for i, p := range parts {
		if i > 0 && t.nulID >= 0 {
			out = append(out, t.nulID)
		}
		if p == "" && !(i == 0 && addSpecialTokens) {
			continue
		}
		out = append(out, t.encode(p, addSpecialTokens && i == 0)...)
	}
	if out == nil {
		out = []int32{}
	}
	return out
}

// Decode turns ids back into text, as tokenizer.decode(ids, skip_special_tokens=...) in the Hugging Face
// tokenizers library (no transformers-level clean_up_tokenization_spaces). Ids outside the vocabulary
// (negative or too large) are skipped, never a crash.
//
// # Notes
//
// Decode panics if the Tokenizer is closed.
func (t *Tokenizer) Decode(ids []int32, skipSpecialTokens bool) string {
	if len(ids) == 0 {
		return ""
	}
	if t.byteLevel != nil {
		t.acquire() // panics if closed, as the library call would
		t.mu.RUnlock()
		if t.loadVocab(); t.decodedEnd != nil {
			return t.decodeByteLevel(ids, skipSpecialTokens)
		}
	}
	s, ok := t.decode(ids, skipSpecialTokens)
	if ok {
		return s
	}
	// The decoded text holds U+0000, which the C ABI cannot return: decode around the NUL tokens.
	return t.decodeWithNUL(ids, skipSpecialTokens)
}

func (t *Tokenizer) decode(ids []int32, skipSpecialTokens bool) (string, bool) {
	ptr := t.acquire()
	defer t.mu.RUnlock()
	cs := C.tokenizers_decode(ptr, (*C.uint32_t)(unsafe.Pointer(&ids[0])), C.uint32_t(len(ids)), C.bool(skipSpecialTokens))
	runtime.KeepAlive(ids)
	if cs == nil {
		return "", false
	}
	defer C.tokenizers_free_string(cs)
	return C.GoString(cs), true
}

// decodeWithNUL handles ids whose text holds U+0000 (a decoder other than ByteLevel, which Decode does in Go): it
// decodes the runs between NUL-bearing tokens and joins them with U+0000.
func (t *Tokenizer) decodeWithNUL(ids []int32, skipSpecialTokens bool) string {
	t.loadVocab()
	var b strings.Builder
	start := 0
	flush := func(end int) {
		if end > start {
			s, _ := t.decode(ids[start:end], skipSpecialTokens)
			b.WriteString(s)
		}
	}
	for i, id := range ids {
		if id == t.nulID {
			flush(i)
			b.WriteByte(0)
			start = i + 1
		}
	}
	flush(len(ids))
	return b.String()
}

// buildDecoded fills decodedBytes and decodedEnd from the model vocabulary (before the added tokens are merged
// into it) and the added tokens, which the library looks up first by id.
func (t *Tokenizer) buildDecoded(model map[string]int32) {
	n := int32(0)
	for _, id := range model {
		n = max(n, id+1)
	}
	for _, a := range t.added {
		n = max(n, a.ID+1)
	}
	tokens := make([]string, n)
	has := make([]bool, n)
	for tok, id := range model {
		if id >= 0 {
			tokens[id], has[id] = tok, true
		}
	}
	for _, a := range t.added {
		if a.ID >= 0 {
			tokens[a.ID], has[a.ID] = a.Content, true
		}
	}
	t.decodedEnd = make([]uint32, n+1)
	buf := make([]byte, 0, 8*n)
	for id := range n {
		if has[id] {
			buf = t.byteLevel.appendDecoded(buf, tokens[id])
		}
		t.decodedEnd[id+1] = uint32(len(buf))
	}
	t.decodedBytes = buf
}

// appendDecoded appends what Hugging Face's ByteLevel decoder makes of one token: its runes mapped back to bytes,
// or, if any rune is outside the byte table (an added token with a space, say), the token's own UTF-8 bytes.
func (bt *byteLevelTable) appendDecoded(dst []byte, tok string) []byte {
	start := len(dst)
	for _, r := range tok {
		b, ok := bt.toByte[r]
		if !ok {
			return append(dst[:start], tok...)
		}
		dst = append(dst, b)
	}
	return dst
}

// decodeByteLevel is Decode for a ByteLevel decoder, from the decoded table: the library's bytes for each id in the
// vocabulary (others are skipped, as the library skips them, and so are special tokens when skip is set),
// converted to UTF-8 as String::from_utf8_lossy does. TestDecodeByteLevelMatchesLibrary checks it against the
// library. Text holding U+0000 needs no detour here: it never crosses the C ABI.
func (t *Tokenizer) decodeByteLevel(ids []int32, skip bool) string {
	end := t.decodedEnd
	keep := func(id int32) bool { return id >= 0 && int(id)+1 < len(end) && !(skip && t.special[id]) }
	n := 0
	for _, id := range ids {
		if keep(id) {
			n += int(end[id+1] - end[id])
		}
	}
	buf := make([]byte, 0, n)
	for _, id := range ids {
		if keep(id) {
			buf = append(buf, t.decodedBytes[end[id]:end[id+1]]...)
		}
	}
	if utf8.Valid(buf) {
		return unsafe.String(unsafe.SliceData(buf), len(buf)) // buf is not kept: the string owns it
	}
	return lossyUTF8(buf)
}

// EncodeBatch encodes several texts in parallel (one goroutine per CPU), each as Encode would.
func (t *Tokenizer) EncodeBatch(texts []string, addSpecialTokens bool) [][]int32 {
	t.acquire() // panics here, in the caller's goroutine, if closed
	t.mu.RUnlock()
	out := make([][]int32, len(texts))
	workers := min(runtime.GOMAXPROCS(0), len(texts))
	if workers <= 1 {
		for i, s := range texts {
			out[i] = t.Encode(s, addSpecialTokens)
		}
		return out
	}
	var next sync.Mutex
	i := 0
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				next.Lock()
				j := i
				i++
				next.Unlock()
				if j >= len(texts) {
					return
				}
				out[j] = t.Encode(texts[j], addSpecialTokens)
			}
		})
	}
	wg.Wait()
	return out
}

// Close frees the Rust tokenizer. It waits for calls in flight; calls after Close panic. Close is idempotent.
func (t *Tokenizer) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ptr != nil {
		C.tokenizers_free_tokenizer(t.ptr)
		t.ptr = nil
	}
}
