package parsers

import "errors"

// ErrUnknownParser is returned (wrapped) by New for a format name that is not built in.
var ErrUnknownParser = errors.New("unknown parser")
