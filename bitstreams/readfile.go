package bitstreams

import (
	"fmt"
	"io"
	"os"
)

// MaxFileSize bounds a bitstream file: the largest devices' images are a
// few hundred megabytes, so anything larger is not a bitstream.
const MaxFileSize = 1 << 30

// ReadFile reads a bitstream file for parsing. It refuses what is not a
// regular file (a device node such as /dev/zero or a FIFO would be read
// for ever) and files larger than MaxFileSize, with the path and the fix.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("bitstream %s: %w (check the path)", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("bitstream %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("bitstream %s is not a regular file but %s: give the path of a .bit, .bin, .rbf or .sof file", path, fileKind(st.Mode()))
	}
	if st.Size() > MaxFileSize {
		return nil, fmt.Errorf("bitstream %s is %d bytes, more than any FPGA image (%d): is it the right file?", path, st.Size(), MaxFileSize)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("bitstream %s: %w", path, err)
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("bitstream %s grew past %d bytes while it was read", path, MaxFileSize)
	}
	return data, nil
}

func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a block device"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return "not a regular file (" + m.Type().String() + ")"
}
