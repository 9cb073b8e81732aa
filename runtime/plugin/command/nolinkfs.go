package command

import (
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
)

// noLinkFS is a scratch directory that refuses symlink and hard-link
// creation. wazero resolves a guest path on the host with the host's own
// path walk, so a guest-made link such as os.symlink('../../../etc', 'e')
// would be followed out of the mount; refusing to create links closes that
// route at its root (scratch directories start empty, so no link can exist).
type noLinkFS struct{ experimentalsys.FS }

func (noLinkFS) Symlink(string, string) experimentalsys.Errno { return experimentalsys.EPERM }
func (noLinkFS) Link(string, string) experimentalsys.Errno    { return experimentalsys.EPERM }

// scratchFS mounts dir read-write without link creation.
func scratchFS(dir string) experimentalsys.FS { return noLinkFS{sysfs.DirFS(dir)} }
