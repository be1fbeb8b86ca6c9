// The base64 block codec: RFC 4648 vectors, scalar vs AVX2, every invalid character at every
// kind of position, padding rules, the JSON shapes, and a mutation loop in which both kernel
// paths must agree and never crash.
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "codec/base64_kernels.h"
#include "codec/codec.h"
#include "common/cpu.h"
#include "tests/check.h"

using qe::codec::Bytes;
using qe::codec::CodecError;
using qe::codec::ErrorCode;
using qe::codec::Kernel;

namespace {

std::mt19937_64& rng() {
  static std::mt19937_64 r(0x5eed);
  return r;
}

std::vector<uint8_t> random_bytes(size_t n) {
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng()());
  return v;
}

// An independent, deliberately naive base64 encoder (bit by bit), to check ours against.
std::string naive_base64(const std::vector<uint8_t>& in) {
  static const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  const size_t bits = in.size() * 8;
  for (size_t i = 0; i < bits; i += 6) {
    unsigned v = 0;
    for (size_t j = i; j < i + 6; ++j) {
      const unsigned bit = j < bits ? (in[j / 8] >> (7 - j % 8)) & 1u : 0u;
      v = v << 1 | bit;
    }
    out.push_back(alphabet[v]);
  }
  while (out.size() % 4 != 0) out.push_back('=');
  return out;
}

std::string body_of(const std::vector<std::string>& blocks, const std::string& size) {
  std::string b = "{\"random\":[";
  for (size_t i = 0; i < blocks.size(); ++i) b += (i ? ",\"" : "\"") + blocks[i] + "\"";
  return b + "],\"size\":" + size + "}";
}

std::string block_text() { return naive_base64(random_bytes(1024)); }

Bytes decode(const std::string& body, Kernel k = Kernel::kAuto) {
  return qe::codec::decode_entropy_response(reinterpret_cast<const uint8_t*>(body.data()), body.size(), k);
}

// Runs decode with both kernels; both must throw CodecError with the same code, block and
// position (returned), or both succeed with the same bytes (code -1).
struct Outcome {
  int code = -1;
  long block = -1;
  long position = -1;
  std::vector<uint8_t> bytes;
};

Outcome outcome(const std::string& body, Kernel k, bool appliance = false) {
  Outcome o;
  try {
    const auto* p = reinterpret_cast<const uint8_t*>(body.data());
    Bytes b = appliance ? qe::codec::decode_appliance_response(p, body.size(), {}, k)
                        : qe::codec::decode_entropy_response(p, body.size(), k);
    o.bytes.assign(b.data.get(), b.data.get() + b.size);
  } catch (const CodecError& e) {
    o.code = static_cast<int>(e.code());
    o.block = e.block_index();
    o.position = e.position();
  }
  return o;
}

Outcome both_paths(const std::string& body, bool appliance = false) {
  const Outcome a = outcome(body, Kernel::kScalar, appliance);
  const Outcome b = outcome(body, Kernel::kAuto, appliance);
  CHECK_EQ(a.code, b.code);
  CHECK_EQ(a.block, b.block);
  CHECK_EQ(a.position, b.position);
  CHECK(a.bytes == b.bytes);
  return a;
}

void expect_error(const std::string& body, ErrorCode code, long block = -1, long position = -1) {
  const Outcome o = both_paths(body);
  CHECK_EQ(o.code, static_cast<int>(code));
  CHECK_EQ(o.block, block);
  if (position >= 0) CHECK_EQ(o.position, position);
}

}  // namespace

QE_TEST(rfc4648_section10_vectors) {
  const std::pair<const char*, const char*> vectors[] = {
      {"", ""},         {"f", "Zg=="},         {"fo", "Zm8="},       {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"},
  };
  for (Kernel k : {Kernel::kScalar, Kernel::kAuto}) {
    for (const auto& [plain, encoded] : vectors) {
      CHECK_EQ(qe::codec::base64_encode(reinterpret_cast<const uint8_t*>(plain), std::strlen(plain), k),
               std::string(encoded));
      const auto d = qe::codec::base64_decode(encoded, k);
      CHECK_EQ(std::string(d.begin(), d.end()), std::string(plain));
    }
  }
}

QE_TEST(every_length_and_padding_case_matches_naive_encoder) {
  for (size_t len = 0; len <= 200; ++len) {
    const auto data = random_bytes(len);
    const std::string expected = naive_base64(data);
    for (Kernel k : {Kernel::kScalar, Kernel::kAuto}) {
      CHECK_EQ(qe::codec::base64_encode(data.data(), data.size(), k), expected);
      CHECK(qe::codec::base64_decode(expected, k) == data);
    }
  }
}

QE_TEST(avx2_kernels_match_scalar_on_random_input) {
  if (!qe::cpu::has_avx2()) return;  // nothing to compare on this CPU
  namespace d = qe::codec::detail;
  for (int round = 0; round < 2000; ++round) {
    const size_t groups = 1 + rng()() % 40;
    const auto data = random_bytes(groups * 24);
    const std::string text = naive_base64(data);
    std::vector<uint8_t> out(data.size(), 0);
    const size_t used = d::decode_avx2(reinterpret_cast<const uint8_t*>(text.data()), text.size(), out.data(),
                                       out.size());
    CHECK_EQ(used, text.size());
    CHECK(out == data);
    std::string enc(text.size(), '\0');
    // Give the encoder its 4 bytes of read slack from a larger buffer.
    std::vector<uint8_t> padded(data);
    padded.resize(data.size() + 4);
    const size_t consumed = d::encode_avx2(padded.data(), data.size(), padded.size(), enc.data());
    CHECK_EQ(consumed, data.size());
    CHECK_EQ(enc, text);
  }
  // Every 6-bit value in every lane position: 64 values rotated through 32 positions.
  for (int shift = 0; shift < 64; ++shift) {
    std::string text(64, 'A');
    for (int i = 0; i < 64; ++i) text[i] = d::kEncodeAlphabet[(i + shift) % 64];
    const auto scalar = qe::codec::base64_decode(text, Kernel::kScalar);
    std::vector<uint8_t> out(48);
    CHECK_EQ(d::decode_avx2(reinterpret_cast<const uint8_t*>(text.data()), 64, out.data(), 48), size_t{64});
    CHECK(out == scalar);
  }
}

QE_TEST(avx2_decode_rejects_every_non_alphabet_byte_in_every_lane) {
  if (!qe::cpu::has_avx2()) return;
  namespace d = qe::codec::detail;
  const std::string valid = naive_base64(random_bytes(24));
  for (int c = 0; c < 256; ++c) {
    const bool in_alphabet = d::kDecodeTable[static_cast<size_t>(c)] != d::kInvalid;
    for (size_t pos = 0; pos < 32; ++pos) {
      std::string text = valid;
      text[pos] = static_cast<char>(c);
      std::vector<uint8_t> out(24);
      const size_t used = d::decode_avx2(reinterpret_cast<const uint8_t*>(text.data()), 32, out.data(), 24);
      CHECK_EQ(used, in_alphabet ? size_t{32} : size_t{0});
    }
  }
}

QE_TEST(entropy_round_trip_and_exact_body) {
  for (size_t n : {size_t{1}, size_t{2}, size_t{7}, size_t{512}}) {
    const auto data = random_bytes(n * 1024);
    std::vector<std::string> blocks;
    for (size_t i = 0; i < n; ++i) {
      blocks.push_back(naive_base64(std::vector<uint8_t>(data.begin() + i * 1024, data.begin() + (i + 1) * 1024)));
    }
    const std::string expected = body_of(blocks, std::to_string(n));
    for (Kernel k : {Kernel::kScalar, Kernel::kAuto}) {
      Bytes body = qe::codec::encode_entropy_response(data.data(), data.size(), k);
      CHECK_EQ(std::string(reinterpret_cast<char*>(body.data.get()), body.size), expected);
      Bytes back = decode(expected, k);
      CHECK_EQ(back.size, data.size());
      CHECK_EQ(back.block_count, n);
      CHECK(std::memcmp(back.data.get(), data.data(), data.size()) == 0);
    }
  }
}

QE_TEST(appliance_round_trip_every_block_size) {
  for (size_t bs = 1; bs <= 1024; bs += (bs < 40 ? 1 : 37)) {
    const size_t count = 1 + rng()() % 5;
    const auto data = random_bytes(bs * count);
    std::string expected = "{\"entropy\":[";
    for (size_t i = 0; i < count; ++i) {
      expected += (i ? ",\"" : "\"") +
                  naive_base64(std::vector<uint8_t>(data.begin() + i * bs, data.begin() + (i + 1) * bs)) + "\"";
    }
    expected += "],\"extensions\":[]}";
    for (Kernel k : {Kernel::kScalar, Kernel::kAuto}) {
      Bytes body = qe::codec::encode_appliance_response(data.data(), data.size(), bs, k);
      CHECK_EQ(std::string(reinterpret_cast<char*>(body.data.get()), body.size), expected);
      Bytes back = qe::codec::decode_appliance_response(reinterpret_cast<const uint8_t*>(expected.data()),
                                                        expected.size(), {}, k);
      CHECK_EQ(back.block_size, bs);
      CHECK_EQ(back.block_count, count);
      CHECK(back.size == data.size() && std::memcmp(back.data.get(), data.data(), data.size()) == 0);
    }
  }
}

QE_TEST(appliance_block_sizes_must_agree_and_match_expectations) {
  const std::string body = "{\"extensions\":[{\"x\":1}],\"entropy\":[\"AAAA\",\"AAA=\"]}";
  const Outcome o = both_paths(body, true);
  CHECK_EQ(o.code, static_cast<int>(ErrorCode::kBlockSize));
  CHECK_EQ(o.block, 1L);
  const std::string ok = "{\"entropy\":[\"AAAA\",\"AAAA\"],\"extensions\":[]}";
  const auto* p = reinterpret_cast<const uint8_t*>(ok.data());
  CHECK_EQ(qe::codec::decode_appliance_response(p, ok.size(), {3, 2}).size, size_t{6});
  CHECK_THROWS(CodecError, qe::codec::decode_appliance_response(p, ok.size(), {4, 0}));
  CHECK_THROWS(CodecError, qe::codec::decode_appliance_response(p, ok.size(), {0, 3}));
  CHECK_EQ(both_paths("{\"entropy\":[\"\"]}", true).code, static_cast<int>(ErrorCode::kBlockSize));
  CHECK_EQ(both_paths("{\"entropy\":[\"AAAA\"],\"extensions\":{}}", true).code, static_cast<int>(ErrorCode::kShape));
  CHECK_EQ(both_paths("{\"entropy\":[\"AAAA\"]}", true).code, -1);  // extensions optional
}

QE_TEST(every_invalid_character_at_every_position_class) {
  // Positions: quad slots 0..3 at the start, inside the SIMD bulk, at the last bulk group,
  // in the scalar tail, and the final (padded) quad.
  const long positions[] = {0, 1, 2, 3, 5, 31, 32, 33, 100, 700, 1343, 1344, 1350, 1364, 1365};
  for (int c = 0x20; c < 256; ++c) {
    if (c == '"' || c == '\\' || c == '=') continue;  // JSON syntax / padding: tested separately
    if (qe::codec::detail::kDecodeTable[static_cast<size_t>(c)] != qe::codec::detail::kInvalid) continue;
    for (long pos : positions) {
      std::vector<std::string> blocks{block_text(), block_text(), block_text()};
      blocks[1][static_cast<size_t>(pos)] = static_cast<char>(c);
      expect_error(body_of(blocks, "3"), ErrorCode::kBase64, 1, pos);
    }
  }
  // Control characters are not legal inside a JSON string at all.
  std::vector<std::string> blocks{block_text()};
  blocks[0][10] = '\n';
  expect_error(body_of(blocks, "1"), ErrorCode::kShape);
  // The standalone decoder rejects every non-alphabet byte everywhere, with its position.
  const std::string text = naive_base64(random_bytes(60));
  for (int c = 0; c < 256; ++c) {
    if (c == '=' || qe::codec::detail::kDecodeTable[static_cast<size_t>(c)] != qe::codec::detail::kInvalid) continue;
    for (size_t pos = 0; pos < text.size(); pos += 7) {
      std::string t = text;
      t[pos] = static_cast<char>(c);
      for (Kernel k : {Kernel::kScalar, Kernel::kAuto}) {
        try {
          (void)qe::codec::base64_decode(t, k);
          CHECK(false);
        } catch (const CodecError& e) {
          CHECK_EQ(static_cast<int>(e.code()), static_cast<int>(ErrorCode::kBase64));
          CHECK_EQ(e.position(), static_cast<long>(pos));
        }
      }
    }
  }
}

QE_TEST(padding_rules) {
  // 1024 bytes = 341 quads + "xx==". Variations on the final quad and length.
  const std::string good = block_text();
  const std::string head = good.substr(0, 1364);
  CHECK_EQ(good.substr(1366), std::string("=="));
  auto with_last = [&](const std::string& tail) { return body_of({head + tail}, "1"); };
  const char c0 = good[1364];
  const char c1 = good[1365];
  CHECK_EQ(both_paths(with_last(std::string{c0, c1} + "==")).code, -1);
  expect_error(with_last(std::string{c0} + "AA=="), ErrorCode::kPadding, 0);         // 3 chars + 2 pad
  expect_error(with_last(std::string{c0, c1} + "="), ErrorCode::kPadding, 0);         // incomplete
  expect_error(with_last(std::string{c0, c1}), ErrorCode::kPadding, 0);               // missing
  expect_error(with_last(std::string{c0} + "==="), ErrorCode::kPadding, 0, 1365);     // '=' in slot 1
  expect_error(with_last("===="), ErrorCode::kPadding, 0, 1364);                      // '=' in slot 0
  expect_error(with_last(std::string{c0, c1} + "==="), ErrorCode::kPadding, 0);       // too much
  expect_error(with_last(std::string{c0, c1} + "==AA"), ErrorCode::kPadding, 0);      // data after
  expect_error(with_last(std::string{c0, c1} + "=A"), ErrorCode::kPadding, 0);        // data inside
  // Non-canonical: the low 4 bits of the second character must be zero before "==".
  const std::string alphabet = qe::codec::detail::kEncodeAlphabet;
  const size_t v1 = alphabet.find(c1);
  for (size_t low = 1; low < 16; ++low) {
    const char bad = alphabet[(v1 & ~size_t{15}) | low];
    expect_error(with_last(std::string{c0, bad} + "=="), ErrorCode::kPadding, 0, 1365);
  }
  // Standalone: "xxx=" with non-zero low 2 bits; "Zm8=" is canonical, "Zm9=" is not.
  CHECK_THROWS(CodecError, qe::codec::base64_decode("Zm9="));
  CHECK_THROWS(CodecError, qe::codec::base64_decode("Zh=="));
  CHECK_THROWS(CodecError, qe::codec::base64_decode("Zg"));
  CHECK_THROWS(CodecError, qe::codec::base64_decode("Zg==Zg=="));
  CHECK_THROWS(CodecError, qe::codec::base64_decode("="));
  CHECK(qe::codec::base64_decode("Zm8=").size() == 2);
}

QE_TEST(block_sizes) {
  expect_error(body_of({block_text(), block_text().substr(0, 1364)}, "2"), ErrorCode::kBlockSize, 1);
  expect_error(body_of({block_text(), block_text().substr(0, 1364) + "AAAA"}, "2"), ErrorCode::kBlockSize, 1);
  expect_error(body_of({block_text(), ""}, "2"), ErrorCode::kBlockSize, 1);
  expect_error(body_of({naive_base64(random_bytes(2000))}, "1"), ErrorCode::kBlockSize, 0);
  expect_error(body_of({naive_base64(random_bytes(1025))}, "1"), ErrorCode::kBlockSize, 0);
  expect_error(body_of({naive_base64(random_bytes(1023))}, "1"), ErrorCode::kBlockSize, 0);
}

QE_TEST(json_encoders_may_write_it_any_legal_way) {
  const auto data = random_bytes(2048);
  const std::string b0 = naive_base64(std::vector<uint8_t>(data.begin(), data.begin() + 1024));
  const std::string b1 = naive_base64(std::vector<uint8_t>(data.begin() + 1024, data.end()));
  auto escape = [](const std::string& s, const std::string& slash, const std::string& plus) {
    std::string r;
    for (char c : s) r += c == '/' ? slash : c == '+' ? plus : std::string(1, c);
    return r;
  };
  const std::vector<std::string> bodies = {
      "{\"size\":2,\"random\":[\"" + b0 + "\",\"" + b1 + "\"]}",
      " \r\n\t{ \"random\" : [ \"" + b0 + "\" ,\n  \"" + b1 + "\" ] ,\n \"size\" : 2 }\n ",
      "{\"random\":[\"" + escape(b0, "\\/", "+") + "\",\"" + escape(b1, "\\u002F", "\\u002b") + "\"],\"size\":2}",
      "{\"random\":[\"" + escape(b0, "\\u002f", "\\u002B") + "\",\"" + b1 + "\"],\"size\":2.0}",
      "{\"r\\u0061ndom\":[\"" + b0 + "\",\"" + b1 + "\"],\"size\":2e0}",
      "{\"x\":{\"random\":[1,{\"a\":\"\\\"]}\\\\\"}],\"size\":[]},\"random\":[\"" + b0 + "\",\"" + b1 +
          "\"],\"y\":[true,false,null,-0.5e-3,\"\\ud83d\\ude00\"],\"size\":0.2e1,\"z\":\"\xc3\xa9\"}",
  };
  for (const auto& body : bodies) {
    const Outcome o = both_paths(body);
    CHECK_EQ(o.code, -1);
    CHECK(o.bytes == data);
  }
}

QE_TEST(shape_errors) {
  const std::string b = block_text();
  expect_error("", ErrorCode::kShape);
  expect_error("[]", ErrorCode::kShape);
  expect_error("{}", ErrorCode::kShape);
  expect_error("\xEF\xBB\xBF" + body_of({b}, "1"), ErrorCode::kShape);  // a BOM is not JSON whitespace
  expect_error(body_of({b}, "1") + "x", ErrorCode::kShape);
  expect_error(body_of({b}, "1") + "{}", ErrorCode::kShape);
  expect_error("{\"random\":\"" + b + "\",\"size\":1}", ErrorCode::kShape);
  expect_error("{\"random\":[1],\"size\":1}", ErrorCode::kShape, -1);
  expect_error("{\"random\":[\"" + b + "\"],\"random\":[\"" + b + "\"],\"size\":1}", ErrorCode::kShape);
  expect_error("{\"random\":[\"" + b + "\"],\"size\":1,\"size\":1}", ErrorCode::kShape);
  expect_error("{\"random\":[\"" + b + "\",],\"size\":1}", ErrorCode::kShape);
  expect_error("{\"random\":[\"" + b + "\"],\"size\":1,}", ErrorCode::kShape);
  expect_error("{\"random\":[\"" + b + "\"],\"size\":01}", ErrorCode::kShape);
  expect_error("{\"random\":[\"" + b + "\"],\"size\":1,\"x\":tru}", ErrorCode::kShape);
  expect_error("{\"random\":[\"" + b + "\"],\"size\":1,\"x\":[1 2]}", ErrorCode::kShape);
  expect_error("{\"random\":[\"" + b + "\"],\"size\":1,\"x\":\"\\x\"}", ErrorCode::kShape);
  expect_error("{\"random\":[\"" + b + "\"],\"size\":1,\"x\":{\"a\" 1}}", ErrorCode::kShape);
  expect_error("{\"random\":[\"" + b + "\"],\"size\":1,\"x\":{\"a\":1]}", ErrorCode::kShape);
  expect_error("{\"random\":[\"" + b + "\"],\"size\":1,\"x\":\"\\u12\"}", ErrorCode::kShape);
  // Every truncation of a valid body is an error (never a crash, never success).
  const std::string full = body_of({b, block_text()}, "2");
  for (size_t cut = 0; cut < full.size(); ++cut) {
    const Outcome o = both_paths(full.substr(0, cut));
    CHECK(o.code != -1);
  }
  // Escapes that decode to non-base64 characters are rejected as such.
  std::string esc = b;
  esc.replace(8, 1, "\\n");
  expect_error(body_of({esc}, "1"), ErrorCode::kBase64, 0, 8);
  esc = b;
  esc.replace(8, 1, "\\u00e9");
  expect_error(body_of({esc}, "1"), ErrorCode::kBase64, 0, 8);
}

QE_TEST(size_and_count_errors) {
  const std::string b = block_text();
  expect_error("{\"random\":[\"" + b + "\"]}", ErrorCode::kSize);
  expect_error(body_of({b}, "2"), ErrorCode::kSize);
  expect_error(body_of({b}, "0"), ErrorCode::kSize);
  expect_error(body_of({b}, "1.5"), ErrorCode::kSize);
  expect_error(body_of({b}, "\"1\""), ErrorCode::kSize);
  expect_error(body_of({b}, "null"), ErrorCode::kSize);
  expect_error(body_of({b}, "1e400"), ErrorCode::kSize);
  expect_error(body_of({b}, "-1"), ErrorCode::kSize);
  expect_error("{\"random\":[],\"size\":0}", ErrorCode::kCount);
  std::vector<std::string> many(513, b);
  expect_error(body_of(many, "513"), ErrorCode::kCount, 512);
  CHECK_EQ(both_paths(body_of({b}, "1.0")).code, -1);
  CHECK_EQ(both_paths(body_of({b}, "10e-1")).code, -1);
}

QE_TEST(encoder_rejects_bad_input) {
  std::vector<uint8_t> data(1024 * 513);
  CHECK_THROWS(CodecError, qe::codec::encode_entropy_response(data.data(), 0));
  CHECK_THROWS(CodecError, qe::codec::encode_entropy_response(data.data(), 1000));
  CHECK_THROWS(CodecError, qe::codec::encode_entropy_response(data.data(), data.size()));
  CHECK_THROWS(CodecError, qe::codec::encode_appliance_response(data.data(), 10, 0));
  CHECK_THROWS(CodecError, qe::codec::encode_appliance_response(data.data(), 2050, 1025));
  CHECK_THROWS(CodecError, qe::codec::encode_appliance_response(data.data(), 10, 3));
  CHECK_THROWS(CodecError, qe::codec::encode_appliance_response(data.data(), 513, 1));
}

QE_TEST(mutated_bodies_never_crash_and_paths_agree) {
  const auto data = random_bytes(3 * 1024);
  Bytes valid = qe::codec::encode_entropy_response(data.data(), data.size());
  const std::string base(reinterpret_cast<char*>(valid.data.get()), valid.size);
  const char interesting[] = "\"\\=/+,:[]{}0123 eu";
  int accepted = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string body = base;
    const int edits = 1 + static_cast<int>(rng()() % 3);
    for (int e = 0; e < edits; ++e) {
      const size_t pos = rng()() % (body.size() + 1);
      const char ch = rng()() % 2 ? interesting[rng()() % (sizeof interesting - 1)] : static_cast<char>(rng()());
      switch (rng()() % 3) {
        case 0: if (pos < body.size()) body[pos] = ch; break;
        case 1: body.insert(pos, 1, ch); break;
        default: if (pos < body.size()) body.erase(pos, 1);
      }
    }
    const Outcome o = both_paths(body);
    if (o.code == -1) {
      ++accepted;
      CHECK_EQ(o.bytes.size(), size_t{3 * 1024});
    }
  }
  CHECK(accepted < 3000);  // the mutations do reach the error paths
}

QE_TEST(into_variants_match_and_respect_their_target) {
  const auto data = random_bytes(5 * 1024);
  const size_t len = qe::codec::entropy_response_length(5);
  std::vector<uint8_t> body(len + 8, 0xAB);
  CHECK_EQ(qe::codec::encode_entropy_response_into(data.data(), data.size(), body.data(), len), len);
  CHECK_EQ(body[len], uint8_t{0xAB});  // nothing written past the body
  Bytes alloc = qe::codec::encode_entropy_response(data.data(), data.size());
  CHECK(alloc.size == len && std::memcmp(alloc.data.get(), body.data(), len) == 0);
  CHECK_THROWS(CodecError, qe::codec::encode_entropy_response_into(data.data(), data.size(), body.data(), len - 1));
  for (Kernel k : {Kernel::kScalar, Kernel::kAuto}) {
    std::vector<uint8_t> out(data.size() + 8, 0xCD);
    const auto r = qe::codec::decode_entropy_response_into(body.data(), len, out.data(), data.size(), k);
    CHECK_EQ(r.size, data.size());
    CHECK(std::memcmp(out.data(), data.data(), data.size()) == 0);
    CHECK_EQ(out[data.size()], uint8_t{0xCD});
    try {
      (void)qe::codec::decode_entropy_response_into(body.data(), len, out.data(), data.size() - 1, k);
      CHECK(false);
    } catch (const CodecError& e) {
      CHECK_EQ(static_cast<int>(e.code()), static_cast<int>(ErrorCode::kInvalidArgument));
    }
  }
  CHECK_THROWS(CodecError, qe::codec::entropy_response_length(0));
  CHECK_THROWS(CodecError, qe::codec::appliance_response_length(1025, 1));
}
