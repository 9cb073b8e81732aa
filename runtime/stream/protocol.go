package stream

import "encoding/json"

// ProtocolVersion is the version of the wire protocol described in docs/PROTOCOL.md. A hello that names another
// version is refused with an error frame of code CodeVersion.
const ProtocolVersion = 1

// Message types sent by a consumer (a trainer).
const (
	TypeHello         = "hello"
	TypeSubmit        = "submit"
	TypeAck           = "ack"
	TypeCredit        = "credit"
	TypeCancel        = "cancel"
	TypePause         = "pause"
	TypeResume        = "resume"
	TypeUpdateWeights = "update_weights"
	TypePing          = "ping"
)

// Message types sent by the server.
const (
	TypeWelcome     = "welcome"
	TypeAccepted    = "accepted"
	TypeRejected    = "rejected"
	TypeTrajectory  = "trajectory"
	TypeRequestDone = "request_done"
	TypeEvent       = "event"
	TypeControlOK   = "control_ok"
	TypeError       = "error"
	TypePong        = "pong"
)

// Error codes carried by error frames and rejections.
const (
	CodeMalformed     = "malformed"         // the frame is not a JSON object with a string "type"
	CodeUnknownType   = "unknown_type"      // the type is not one this protocol version knows
	CodeTooLarge      = "message_too_large" // the frame is larger than the server's max_message_bytes
	CodeBinary        = "binary_frame"      // binary frames are not part of protocol version 1
	CodeInvalid       = "invalid"           // a field is missing or out of range; the message says which
	CodeUnauthorized  = "unauthorized"      // missing or wrong bearer token (the connection is then closed)
	CodeVersion       = "unsupported_version"
	CodeHelloRequired = "hello_required" // the first frame of a connection must be a hello
	CodeUnknownReq    = "unknown_request"
	CodeDuplicate     = "duplicate_request"
	CodeShuttingDown  = "shutting_down"
	CodeSuperseded    = "superseded" // another connection said hello with the same consumer id
	CodeRunner        = "runner_error"
	CodeInternal      = "internal_error" // handling the frame panicked (a bug): the connection stays up
	CodeOverloaded    = "overloaded"
	CodeSpool         = "spool_error" // the server could not write the request journal (disk full, I/O error)
)

// Request statuses carried by request_done.
const (
	RequestCompleted = "completed"
	RequestCancelled = "cancelled"
	RequestFailed    = "failed"
)

// Pause modes accepted by a pause message; they are SGLang's /pause_generation modes.
const (
	PauseAbort   = "abort"
	PauseRetract = "retract"
	PauseInPlace = "in_place"
)

// Hello is the first frame a consumer sends on a connection.
type Hello struct {
	Type     string `json:"type"`
	Protocol int    `json:"protocol"`
	// Consumer names the consumer: trajectories of the requests it submits belong to it, and a later connection
	// with the same id receives everything it has not acked.
	Consumer string `json:"consumer_id"`
	// Token is the bearer token, when it was not sent in the Authorization header of the upgrade request.
	Token string `json:"token,omitempty"`
	// Credits is the initial number of spooled messages (trajectories, request_done) the server may send
	// before the consumer grants more with a credit message.
	Credits int `json:"credits"`
	// Resume (default true) keeps the consumer's unacked messages and in-flight requests. False starts a fresh
	// session: the consumer's in-flight requests are cancelled and its unacked messages are deleted.
	Resume *bool `json:"resume,omitempty"`
}

// Welcome answers a hello.
type Welcome struct {
	Type     string `json:"type"`
	Protocol int    `json:"protocol"`
	Consumer string `json:"consumer_id"`
	Session  string `json:"session_id"`
	// Unacked is the number of spooled messages of this consumer that will be (re)delivered.
	Unacked int `json:"unacked"`
	// Dropped is the number of unacked messages deleted because the hello asked for resume false.
	Dropped int `json:"dropped,omitempty"`
	// ActiveRequests lists the consumer's requests still running on the server (including the ones a restart
	// resumed).
	ActiveRequests []string `json:"active_requests"`
	// DoneRequests lists the consumer's requests that have ended and whose request_done is spooled, not yet
	// acked (it follows). A request the consumer waits for that is in neither list is unknown to the server.
	DoneRequests []string `json:"done_requests"`
	// SpoolID identifies the server's spool. Sequence numbers are only meaningful within one spool: after a
	// reconnect that reports another id (the spool was lost), ack what came before by trajectory id.
	SpoolID         string `json:"spool_id"`
	MaxMessageBytes int64  `json:"max_message_bytes"`
}

// Item is one prompt of a rollout request; it is run N times.
type Item struct {
	ID       string          `json:"id"`
	Messages json.RawMessage `json:"messages"`
	N        int             `json:"n,omitempty"`
	Label    json.RawMessage `json:"label,omitempty"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
	// MaxResponseTokens is the item's episode-wide response budget (docs/PROTOCOL.md; 0: the agent's
	// max_response_tokens).
	MaxResponseTokens int `json:"max_response_tokens,omitempty"`
}

// Submit asks the server to run a rollout request.
type Submit struct {
	Type      string `json:"type"`
	RequestID string `json:"request_id"`
	Agent     string `json:"agent,omitempty"`
	Items     []Item `json:"items"`
	// Sampling overrides the agent's sampling parameters (SGLang sampling_params keys).
	Sampling json.RawMessage `json:"sampling,omitempty"`
	// Events subscribes the consumer to per-turn event frames of this request (best effort, not spooled).
	Events bool `json:"events,omitempty"`
}

// Accepted answers a submit that will run.
type Accepted struct {
	Type      string `json:"type"`
	RequestID string `json:"request_id"`
	// Samples is the number of trajectories the request will produce if it is not cancelled.
	Samples int `json:"samples"`
	// Duplicate is true when a request with this id was already running for this consumer; nothing new started.
	Duplicate bool `json:"duplicate,omitempty"`
}

// Rejected answers a submit that will not run.
type Rejected struct {
	Type      string `json:"type"`
	RequestID string `json:"request_id"`
	Code      string `json:"code"`
	Reason    string `json:"reason"`
}

// Ack tells the server that the consumer has durably handled messages: they leave the spool.
type Ack struct {
	Type          string   `json:"type"`
	Seqs          []uint64 `json:"seqs,omitempty"`
	TrajectoryIDs []string `json:"trajectory_ids,omitempty"`
}

// Credit grants the server N more spooled messages to send.
type Credit struct {
	Type    string `json:"type"`
	Credits int    `json:"credits"`
}

// Cancel aborts a request's in-flight episodes; finished trajectories stay deliverable.
type Cancel struct {
	Type      string `json:"type"`
	RequestID string `json:"request_id"`
}

// Control is a pause, resume or update_weights message. ID correlates the control_ok or error answer.
type Control struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	// Mode is the pause mode (PauseAbort, PauseRetract or PauseInPlace); pause only.
	Mode string `json:"mode,omitempty"`
	// ModelPath, WeightVersion and Options are for update_weights.
	ModelPath     string          `json:"model_path,omitempty"`
	WeightVersion string          `json:"weight_version,omitempty"`
	Options       json.RawMessage `json:"options,omitempty"`
}

// ControlOK answers a control message that succeeded.
type ControlOK struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	Op   string `json:"op"`
}

// ErrorRef names the message an error frame is about.
type ErrorRef struct {
	Type string `json:"type,omitempty"`
	ID   string `json:"id,omitempty"`
}

// ErrorFrame reports a problem with a message; the connection stays up unless the code is CodeUnauthorized,
// CodeVersion, CodeHelloRequired or CodeSuperseded.
type ErrorFrame struct {
	Type    string    `json:"type"`
	Code    string    `json:"code"`
	Message string    `json:"message"`
	Ref     *ErrorRef `json:"ref,omitempty"`
}

// RequestDone is spooled (and acked) like a trajectory: it tells the consumer that a request produced all the
// trajectories it will produce.
type RequestDone struct {
	Type         string `json:"type"`
	Seq          uint64 `json:"seq"`
	RequestID    string `json:"request_id"`
	Status       string `json:"status"`
	Error        string `json:"error,omitempty"`
	Trajectories int    `json:"trajectories"`
}

// TrajectoryFrame is what a trajectory message looks like on the wire; the server builds it without
// re-encoding the trajectory.
type TrajectoryFrame struct {
	Type         string          `json:"type"`
	Seq          uint64          `json:"seq"`
	RequestID    string          `json:"request_id"`
	ItemID       string          `json:"item_id"`
	SampleIndex  int             `json:"sample_index"`
	GroupID      string          `json:"group_id"`
	TrajectoryID string          `json:"trajectory_id"`
	Trajectory   json.RawMessage `json:"trajectory"`
}

// EventFrame carries one per-turn event of a request whose submit asked for events.
type EventFrame struct {
	Type        string          `json:"type"`
	RequestID   string          `json:"request_id"`
	ItemID      string          `json:"item_id"`
	SampleIndex int             `json:"sample_index"`
	Turn        int             `json:"turn"`
	Event       json.RawMessage `json:"event"`
}
