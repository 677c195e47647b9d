package prr

// cas is one compare-and-swap unit of the sorting network: after it, lane
// a holds the smaller key and lane b the larger (§3.2a).
type cas struct{ a, b uint16 }

// oddEvenMergeLayers builds Batcher's odd-even merge sort for n lanes (n a
// power of two) as its parallel steps: log2(n)(log2(n)+1)/2 layers of CAS
// units, each layer one pipeline stage (§3.2a, [4]). Layer order and the
// lanes each unit joins are those of the classic network; a depth-optimal
// one would sort the same keys, but the stage count is what Table 1 uses.
func oddEvenMergeLayers(n int) [][]cas {
	var layers [][]cas
	for p := 1; p < n; p <<= 1 {
		for k := p; k >= 1; k >>= 1 {
			var layer []cas
			for j := k % p; j+k < n; j += 2 * k {
				for i := 0; i < k && i+j+k < n; i++ {
					if (i+j)/(2*p) == (i+j+k)/(2*p) {
						layer = append(layer, cas{uint16(i + j), uint16(i + j + k)})
					}
				}
			}
			layers = append(layers, layer)
		}
	}
	return layers
}
