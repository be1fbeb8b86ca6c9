// The PKCS#11 sink against real modules: SoftHSMv2 (a token made for the test in a
// temporary directory with its own SOFTHSM2_CONF) and OpenSC's module (no reader here,
// and a C_SeedRandom that answers CKR_FUNCTION_NOT_SUPPORTED).
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "pkcs11/module.h"
#include "pkcs11/sink.h"
#include "tests/check.h"

using namespace qe::pkcs11;

namespace {

const char* first_existing(std::initializer_list<const char*> paths) {
  for (const char* p : paths)
    if (access(p, R_OK) == 0) return p;
  return nullptr;
}

const char* softhsm_path() {
  return first_existing({"/usr/lib/softhsm/libsofthsm2.so", "/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so",
                         "/usr/local/lib/softhsm/libsofthsm2.so"});
}
const char* opensc_path() {
  return first_existing({"/usr/lib/x86_64-linux-gnu/opensc-pkcs11.so", "/usr/lib/opensc-pkcs11.so",
                         "/usr/lib/x86_64-linux-gnu/pkcs11/opensc-pkcs11.so"});
}

const std::string kLabel = "qentropy-test";
const std::string kPin = "123456";

// One SoftHSM token directory per test process, created on first use. SoftHSM reads
// SOFTHSM2_CONF when it is first initialized, so every test here shares it.
bool softhsm_ready(std::string& why) {
  static int state = 0;  // 0 unknown, 1 ready, 2 unavailable
  static std::string reason;
  if (state == 0) {
    state = 2;
    if (!softhsm_path()) {
      reason = "SoftHSMv2 (libsofthsm2.so) is not installed";
    } else if (std::system("command -v softhsm2-util >/dev/null 2>&1") != 0) {
      reason = "softhsm2-util is not installed";
    } else {
      char dir[] = "/tmp/qe-softhsm-XXXXXX";
      if (!mkdtemp(dir)) {
        reason = "mkdtemp failed";
      } else {
        const std::string base = dir;
        static std::string cleanup_dir;
        cleanup_dir = base;
        std::atexit([] { (void)!std::system(("rm -rf '" + cleanup_dir + "'").c_str()); });
        mkdir((base + "/tokens").c_str(), 0700);
        std::ofstream(base + "/softhsm2.conf") << "directories.tokendir = " << base << "/tokens\n"
                                               << "objectstore.backend = file\nlog.level = ERROR\n";
        setenv("SOFTHSM2_CONF", (base + "/softhsm2.conf").c_str(), 1);
        const std::string init = "softhsm2-util --init-token --free --label " + kLabel + " --pin " + kPin +
                                 " --so-pin 654321 >/dev/null 2>&1 && softhsm2-util --init-token --free"
                                 " --label other-token --pin 111111 --so-pin 222222 >/dev/null 2>&1";
        if (std::system(init.c_str()) == 0)
          state = 1;
        else
          reason = "softhsm2-util --init-token failed";
      }
    }
  }
  why = reason;
  return state == 1;
}

#define NEED_SOFTHSM()                                          \
  std::string why_;                                             \
  if (!softhsm_ready(why_)) {                                   \
    std::printf("  skipped: %s\n", why_.c_str());               \
    return;                                                     \
  }

}  // namespace

QE_TEST(rv_names) {
  CHECK_EQ(rv_name(ck::CKR_OK), std::string("CKR_OK"));
  CHECK_EQ(rv_name(0x120), std::string("CKR_RANDOM_SEED_NOT_SUPPORTED"));
  CHECK_EQ(rv_name(0x54), std::string("CKR_FUNCTION_NOT_SUPPORTED"));
  CHECK_EQ(rv_name(0x80000001UL), std::string("CKR_VENDOR_DEFINED+0x1"));
  CHECK_EQ(rv_name(0x4242), std::string("CKR_0x4242"));
  Pkcs11Error e("C_SeedRandom", 0x120);
  CHECK_EQ(std::string(e.what()), std::string("C_SeedRandom: CKR_RANDOM_SEED_NOT_SUPPORTED (0x120)"));
}

QE_TEST(labels_are_blank_padded_fields) {
  unsigned char field[32];
  std::memset(field, ' ', sizeof field);
  std::memcpy(field, "my token", 8);
  CHECK_EQ(trim_padded(field, sizeof field), std::string("my token"));
  std::memset(field, 'x', sizeof field);  // a full 32-byte label has no padding at all
  CHECK_EQ(trim_padded(field, sizeof field).size(), size_t(32));
}

QE_TEST(unloadable_modules_are_reported) {
  CHECK_THROWS(ModuleLoadError, Module("/nonexistent/module.so"));
  // A real shared library that is not a PKCS#11 module.
  const char* libc = first_existing({"/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6"});
  if (libc) {
    try {
      Module m(libc);
      CHECK(false);
    } catch (const ModuleLoadError& e) {
      CHECK(std::string(e.what()).find("no C_GetFunctionList") != std::string::npos);
    }
  }
}

QE_TEST(softhsm_tokens_are_found_by_label) {
  NEED_SOFTHSM();
  Module m(softhsm_path());
  const auto tokens = m.tokens();
  bool found = false;
  for (const auto& t : tokens) {
    if (t.label == kLabel) {
      found = true;
      CHECK(t.has_rng());
      CHECK_EQ(t.manufacturer, std::string("SoftHSM project"));
    }
  }
  CHECK(found);
  CHECK_EQ(m.find_slots(kLabel).size(), size_t(1));
  CHECK_EQ(m.find_slots(kLabel + "   ").size(), size_t(1));
  CHECK_EQ(m.find_slots("no-such-token").size(), size_t(0));
}

QE_TEST(softhsm_accepts_seeds_and_counts_them) {
  NEED_SOFTHSM();
  SinkConfig cfg{softhsm_path(), kLabel, kPin, false};
  Sink sink(cfg);
  CHECK_EQ(sink.slot_count(), size_t(1));
  std::vector<uint8_t> seed(48);
  for (size_t i = 0; i < seed.size(); ++i) seed[i] = uint8_t(i * 7 + 1);
  for (int i = 0; i < 5; ++i) {
    const SeedResult r = sink.seed(0, seed.data(), seed.size());
    CHECK(r.ok);
    CHECK_EQ(r.rv, ck::CKR_OK);
  }
  const auto st = sink.slots().at(0);
  CHECK_EQ(st.seed_calls, uint64_t(5));
  CHECK_EQ(st.bytes_seeded, uint64_t(240));
  CHECK_EQ(st.errors, uint64_t(0));
  CHECK(st.status == SlotStatus::Active);
  // The session is live: the token generates random bytes on it.
  const auto out = sink.generate(0, 32);
  CHECK_EQ(out.size(), size_t(32));
}

QE_TEST(softhsm_with_os_random_mixing) {
  NEED_SOFTHSM();
  Sink sink(SinkConfig{softhsm_path(), kLabel, kPin, true});
  std::vector<uint8_t> seed(4096, 0xA5);
  CHECK(sink.seed(0, seed.data(), seed.size()).ok);
  const uint64_t seeded = sink.slots().at(0).bytes_seeded;
  CHECK_EQ(seeded, uint64_t(4096));
}

QE_TEST(softhsm_without_pin_still_seeds) {
  NEED_SOFTHSM();
  Sink sink(SinkConfig{softhsm_path(), kLabel, std::nullopt, false});
  uint8_t b[16] = {1};
  CHECK(sink.seed(0, b, sizeof b).ok);
}

QE_TEST(softhsm_wrong_pin_is_a_clear_error) {
  NEED_SOFTHSM();
  try {
    Sink sink(SinkConfig{softhsm_path(), "other-token", std::string("999999"), false});
    CHECK(false);
  } catch (const Pkcs11Error& e) {
    CHECK_EQ(e.rv(), ck::CKR_PIN_INCORRECT);
    CHECK(std::string(e.what()).find("other-token") != std::string::npos);
  }
}

QE_TEST(unknown_label_lists_the_tokens_present) {
  NEED_SOFTHSM();
  try {
    Sink sink(SinkConfig{softhsm_path(), "absent", std::nullopt, false});
    CHECK(false);
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    CHECK(msg.find("no token labelled 'absent'") != std::string::npos);
    CHECK(msg.find(kLabel) != std::string::npos);
  }
}

// A session that goes away under the sink (here: closed behind its back by a second
// handle on the same module) is reopened on the next seed, and seeding goes on.
QE_TEST(softhsm_lost_session_is_reopened) {
  NEED_SOFTHSM();
  Sink sink(SinkConfig{softhsm_path(), kLabel, kPin, false});
  uint8_t b[32] = {3};
  CHECK(sink.seed(0, b, sizeof b).ok);
  {
    // Close every session the sink could hold: SoftHSM session handles are small
    // integers, and closing an unknown one is harmless.
    Module m(softhsm_path());
    for (ck::SESSION_HANDLE h = 1; h < 64; ++h) m.close_session(h);
  }
  const SeedResult lost = sink.seed(0, b, sizeof b);
  CHECK(!lost.ok);
  CHECK_EQ(lost.rv, ck::CKR_SESSION_HANDLE_INVALID);
  CHECK(sink.slots().at(0).status == SlotStatus::Reconnecting);
  const SeedResult again = sink.seed(0, b, sizeof b);
  CHECK(again.ok);
  const uint64_t calls = sink.slots().at(0).seed_calls;
  CHECK_EQ(calls, uint64_t(2));
}

// OpenSC with no reader: the module loads and initializes, reports no token, and a sink
// for any label fails with a message saying so. Its C_SeedRandom answers
// CKR_FUNCTION_NOT_SUPPORTED (whatever the session); fed into a sink's slot, that
// answer is reported once and the slot is never called again.
QE_TEST(opensc_unsupported_path) {
  const char* path = opensc_path();
  if (!path) {
    std::printf("  skipped: OpenSC's opensc-pkcs11.so is not installed\n");
    return;
  }
  ck::RV answer = ck::CKR_OK;
  {
    Module m(path);
    CHECK(m.library_description().find("OpenSC") != std::string::npos);
    CHECK_EQ(m.tokens().size(), size_t(0));
    uint8_t b[8] = {};
    answer = m.seed_random(1, b, sizeof b);
    CHECK_EQ(answer, ck::CKR_FUNCTION_NOT_SUPPORTED);
  }
  try {
    Sink s(SinkConfig{path, "anything", std::nullopt, false});
    CHECK(false);
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find("reports no token present") != std::string::npos);
  }
  // The state machine with OpenSC's real answer, on a SoftHSM slot (the only module here
  // with a token to open a session on).
  std::string why;
  if (!softhsm_ready(why)) {
    std::printf("  partly skipped: %s\n", why.c_str());
    return;
  }
  Sink sink(SinkConfig{softhsm_path(), kLabel, kPin, false});
  const SeedResult first = sink.apply(0, answer, 48);
  CHECK(!first.ok);
  CHECK(first.newly_unsupported);
  CHECK(first.message.find("does not accept seeds (C_SeedRandom: CKR_FUNCTION_NOT_SUPPORTED)") != std::string::npos);
  uint8_t b[48] = {};
  for (int i = 0; i < 3; ++i) {
    const SeedResult later = sink.seed(0, b, sizeof b);
    CHECK(later.skipped);
    CHECK(!later.newly_unsupported);
  }
  const auto st = sink.slots().at(0);
  CHECK(st.status == SlotStatus::Unsupported);
  CHECK_EQ(st.seed_calls, uint64_t(0));
  CHECK_EQ(st.errors, uint64_t(1));
}

QE_TEST(classification_of_answers) {
  CHECK(classify(ck::CKR_RANDOM_SEED_NOT_SUPPORTED) == Verdict::Unsupported);
  CHECK(classify(ck::CKR_FUNCTION_NOT_SUPPORTED) == Verdict::Unsupported);
  CHECK(classify(ck::CKR_DEVICE_REMOVED) == Verdict::SessionLost);
  CHECK(classify(ck::CKR_TOKEN_NOT_PRESENT) == Verdict::SessionLost);
  CHECK(classify(ck::CKR_PIN_LOCKED) == Verdict::LoginRefused);
  CHECK(classify(ck::CKR_DEVICE_ERROR) == Verdict::Error);
}
