-- storedBlocks(text): `text` as deflate's stored blocks, none of them final (RFC 1951, 3.2.4: a byte
-- for the header at a byte boundary, LEN and NLEN little-endian, then the bytes as they are), so that
-- a raw deflate stream made elsewhere can follow it: inflated, the two read as one text. Redis's Lua
-- has no zlib; this lets a script put lines before a worker's deflated ones without reading those.
local function storedBlocks(text)
  local blocks = {}
  for from = 1, #text, 65535 do
    local chunk = string.sub(text, from, from + 65534)
    local size, negated = #chunk, 65535 - #chunk
    blocks[#blocks + 1] = string.char(0, size % 256, math.floor(size / 256), negated % 256, math.floor(negated / 256)) .. chunk
  end
  return table.concat(blocks)
end
