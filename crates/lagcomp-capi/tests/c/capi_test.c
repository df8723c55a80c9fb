/*
 * Every function of lagcomp.h from C11, with its error paths, and a small match whose
 * verdicts the Rust test compares with the same scene run through the Rust crates.
 *
 * Usage: capi_test OUT_DIR
 * Writes OUT_DIR/match.jsonl (the match recording) and OUT_DIR/audit.jsonl (the audit
 * log), and prints one "verdict ..." line per claim to stdout. Exits 0 when every check
 * passed; otherwise prints the failing line and exits 1.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lagcomp.h"

static int failures = 0;

/* Checks that `call` returns `expected`; on a failure prints the line, both statuses and
 * the library's last error. */
#define EXPECT(expected, call)                                                          \
  do {                                                                                  \
    LagcompStatus got_ = (call);                                                        \
    if (got_ != (expected)) {                                                           \
      fprintf(stderr, "%s:%d: %s returned %s, expected %s: %s\n", __FILE__, __LINE__,  \
              #call, lagcomp_status_name(got_), lagcomp_status_name(expected),          \
              lagcomp_last_error());                                                    \
      failures++;                                                                       \
    }                                                                                   \
  } while (0)

#define OK(call) EXPECT(LAGCOMP_OK, call)

#define CHECK(cond)                                                                     \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);         \
      failures++;                                                                       \
    }                                                                                   \
  } while (0)

#define TICK_RATE 64.0
#define BONES 3

static double time_of(uint32_t tick) { return (double)tick / TICK_RATE; }

static LagcompQuat identity(void) {
  LagcompQuat q = {0.0f, 0.0f, 0.0f, 1.0f};
  return q;
}

static LagcompVec3 v3(float x, float y, float z) {
  LagcompVec3 v = {x, y, z};
  return v;
}

/* A soldier's three bones standing at (x, 0, z): pelvis, chest, head. */
static void soldier_bones(float x, float z, LagcompBoneTransform *out) {
  const float heights[BONES] = {1.0f, 1.35f, 1.7f};
  for (int b = 0; b < BONES; b++) {
    memset(&out[b], 0, sizeof out[b]);
    out[b].rotation = identity();
    out[b].translation = v3(x, heights[b], z);
    out[b].scale = v3(1.0f, 1.0f, 1.0f);
  }
}

/* Where the strafing target stands at a time: 2 m/s along +x, 10 m ahead. */
static float target_x(double t) { return (float)(2.0 * t); }

static void soldier_rig(LagcompHitbox out[3]) {
  memset(out, 0, 3 * sizeof out[0]);
  for (int i = 0; i < 3; i++) {
    out[i].id = (uint16_t)i;
    out[i].bone = (uint16_t)i;
    out[i].offset.rotation = identity();
  }
  out[0].zone = LAGCOMP_ZONE_TORSO;
  out[0].shape.kind = LAGCOMP_SHAPE_BOX;
  out[0].shape.half_extents = v3(0.2f, 0.1f, 0.15f);
  out[0].name = "pelvis";
  out[1].zone = LAGCOMP_ZONE_TORSO;
  out[1].shape.kind = LAGCOMP_SHAPE_CAPSULE;
  out[1].shape.axis = LAGCOMP_AXIS_Y;
  out[1].shape.radius = 0.2f;
  out[1].shape.half_height = 0.1f;
  out[1].name = "chest";
  out[2].zone = LAGCOMP_ZONE_HEAD;
  out[2].shape.kind = LAGCOMP_SHAPE_SPHERE;
  out[2].shape.radius = 0.12f;
  out[2].name = NULL; /* a null name is allowed */
}

static const char *RULES =
    "[weapons.rifle]\n"
    "id = 1\n"
    "max_range = 250.0\n"
    "min_interval = 0.02\n"
    "aim_tolerance_deg = 30.0\n"
    "origin_tolerance = 1.0\n"
    "hit_leeway = 1.25\n"
    "hit_leeway_min = 0.05\n"
    "max_rewind = 0.35\n"
    "damage = { head = 4.0, torso = 1.0, limb = 0.75 }\n";

static void print_verdict(const LagcompVerdict *v) {
  printf("verdict seq=%u label=%s code=%u target=%llu hitbox=%u damage=%.6g wall=%u\n",
         v->seq, v->label, (unsigned)v->reason_code,
         (unsigned long long)(v->outcome == LAGCOMP_OUTCOME_CONFIRMED ? v->target : 0),
         (unsigned)v->hitbox, (double)v->damage_multiplier, v->wall);
}

static LagcompShotClaim claim_at(uint64_t shooter, uint32_t seq, uint32_t tick,
                                 LagcompVec3 aim_at) {
  LagcompShotClaim c;
  memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  c.render_kind = LAGCOMP_RENDER_TICKS;
  c.shooter = shooter;
  c.seq = seq;
  c.weapon = 1;
  c.from_tick = tick;
  c.to_tick = tick + 1;
  c.fraction = 0.0f;
  c.origin = v3(0.0f, 1.7f, 0.0f);
  c.direction = v3(aim_at.x, aim_at.y - 1.7f, aim_at.z);
  return c;
}

/* Every error path that needs no scene. */
static void errors_without_a_scene(void) {
  LagcompHistoryConfig config;
  LagcompHistory *history = NULL;
  EXPECT(LAGCOMP_NULL_POINTER, lagcomp_history_config_default(NULL));
  OK(lagcomp_history_config_default(&config));
  CHECK(config.struct_size == sizeof config && config.tick_rate == 64.0);
  EXPECT(LAGCOMP_NULL_POINTER, lagcomp_history_new(NULL, &history));
  EXPECT(LAGCOMP_NULL_POINTER, lagcomp_history_new(&config, NULL));
  CHECK(strstr(lagcomp_last_error(), "out") != NULL);
  config.struct_size = 4;
  EXPECT(LAGCOMP_BAD_LENGTH, lagcomp_history_new(&config, &history));
  OK(lagcomp_history_config_default(&config));
  config.tick_rate = NAN;
  EXPECT(LAGCOMP_NOT_FINITE, lagcomp_history_new(&config, &history));
  config.tick_rate = -5.0;
  EXPECT(LAGCOMP_INVALID_ARGUMENT, lagcomp_history_new(&config, &history));
  CHECK(history == NULL);

  /* Handles that are null, made up, or freed. */
  EXPECT(LAGCOMP_NULL_POINTER, lagcomp_history_free(NULL));
  EXPECT(LAGCOMP_STALE_HANDLE, lagcomp_history_free((LagcompHistory *)(uintptr_t)0x1234));
  OK(lagcomp_history_config_default(&config));
  OK(lagcomp_history_new(&config, &history));
  OK(lagcomp_history_free(history));
  EXPECT(LAGCOMP_STALE_HANDLE, lagcomp_history_free(history));
  EXPECT(LAGCOMP_STALE_HANDLE, lagcomp_history_reserve(history, 1, 1));
  EXPECT(LAGCOMP_STALE_HANDLE, lagcomp_history_despawn(history, 0));
  EXPECT(LAGCOMP_STALE_HANDLE, lagcomp_history_finish_match_recording(history));
  EXPECT(LAGCOMP_STALE_HANDLE, lagcomp_validator_free((LagcompValidator *)history));
  LagcompValidator *validator = NULL;
  EXPECT(LAGCOMP_STALE_HANDLE, lagcomp_validator_new(history, RULES, &validator));

  CHECK(strcmp(lagcomp_status_name(LAGCOMP_REWIND), "LAGCOMP_REWIND") == 0);
  CHECK(strcmp(lagcomp_status_name(12345), "LAGCOMP_UNKNOWN_STATUS") == 0);
  CHECK(strcmp(lagcomp_reject_reason_name(404), "backtrack") == 0);
  CHECK(lagcomp_reject_reason_name(0) == NULL);
  CHECK(strcmp(lagcomp_reject_reason_name(1001), "invulnerable") == 0);
  CHECK(strcmp(lagcomp_reject_reason_name(1002), "dodged") == 0);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  if (lagcomp_abi_version() != LAGCOMP_ABI_VERSION) {
    fprintf(stderr, "library ABI %u, header %u\n", lagcomp_abi_version(), LAGCOMP_ABI_VERSION);
    return 1;
  }
  char recording_path[4096], audit_path[4096], bad_path[4096];
  snprintf(recording_path, sizeof recording_path, "%s/match.jsonl", argv[1]);
  snprintf(audit_path, sizeof audit_path, "%s/audit.jsonl", argv[1]);
  snprintf(bad_path, sizeof bad_path, "%s/no/such/dir/x.jsonl", argv[1]);

  errors_without_a_scene();

  LagcompHistoryConfig config;
  OK(lagcomp_history_config_default(&config));
  config.tick_rate = TICK_RATE;
  LagcompHistory *history = NULL;
  OK(lagcomp_history_new(&config, &history));
  EXPECT(LAGCOMP_NULL_POINTER, lagcomp_history_start_match_recording(history, NULL));
  EXPECT(LAGCOMP_IO, lagcomp_history_start_match_recording(history, bad_path));
  EXPECT(LAGCOMP_INVALID_STATE, lagcomp_history_finish_match_recording(history));
  OK(lagcomp_history_start_match_recording(history, recording_path));
  EXPECT(LAGCOMP_INVALID_STATE, lagcomp_history_start_match_recording(history, recording_path));
  OK(lagcomp_history_reserve(history, 3, 7));

  /* Rigs. */
  LagcompHitbox rig[3];
  soldier_rig(rig);
  uint64_t shooter = 0, target = 0, crate = 0, scratch = 0;
  EXPECT(LAGCOMP_NULL_POINTER, lagcomp_history_spawn(history, BONES, NULL, 3, &shooter));
  EXPECT(LAGCOMP_NULL_POINTER, lagcomp_history_spawn(history, BONES, rig, 3, NULL));
  EXPECT(LAGCOMP_INVALID_ARGUMENT, lagcomp_history_spawn(history, 2, rig, 3, &scratch));
  CHECK(strstr(lagcomp_last_error(), "bone") != NULL);
  EXPECT(LAGCOMP_INVALID_ARGUMENT, lagcomp_history_spawn(history, BONES, rig, 0, &scratch));
  rig[2].shape.radius = NAN;
  EXPECT(LAGCOMP_NOT_FINITE, lagcomp_history_spawn(history, BONES, rig, 3, &scratch));
  rig[2].shape.radius = 0.12f;
  rig[2].zone = 77;
  EXPECT(LAGCOMP_INVALID_ARGUMENT, lagcomp_history_spawn(history, BONES, rig, 3, &scratch));
  rig[2].zone = LAGCOMP_ZONE_HEAD;
  rig[1].offset.rotation.w = 2.0f;
  EXPECT(LAGCOMP_INVALID_ARGUMENT, lagcomp_history_spawn(history, BONES, rig, 3, &scratch));
  rig[1].offset.rotation.w = 1.0f;
  OK(lagcomp_history_spawn(history, BONES, rig, 3, &shooter));
  OK(lagcomp_history_spawn(history, BONES, rig, 3, &target));
  LagcompHitbox box;
  memset(&box, 0, sizeof box);
  box.id = 9;
  box.zone = LAGCOMP_ZONE_CUSTOM;
  box.zone_custom = 5;
  box.offset.rotation = identity();
  box.shape.kind = LAGCOMP_SHAPE_BOX;
  box.shape.half_extents = v3(0.5f, 0.5f, 0.5f);
  box.name = "crate";
  OK(lagcomp_history_spawn_rigid(history, &box, 1, &crate));
  CHECK(shooter != target && target != crate);
  EXPECT(LAGCOMP_UNKNOWN_ENTITY, lagcomp_history_despawn(history, 999));

  /* The static world: a wall to the left. */
  LagcompShape wall_shape;
  memset(&wall_shape, 0, sizeof wall_shape);
  wall_shape.kind = LAGCOMP_SHAPE_BOX;
  wall_shape.half_extents = v3(1.0f, 1.5f, 0.2f);
  LagcompPose wall_pose = {v3(-3.0f, 1.5f, 20.0f), identity()};
  uint32_t wall = 99;
  EXPECT(LAGCOMP_NULL_POINTER, lagcomp_history_add_static(history, NULL, &wall_pose, 1, &wall));
  wall_shape.kind = 42;
  EXPECT(LAGCOMP_INVALID_ARGUMENT, lagcomp_history_add_static(history, &wall_shape, &wall_pose, 1, &wall));
  wall_shape.kind = LAGCOMP_SHAPE_BOX;
  OK(lagcomp_history_add_static(history, &wall_shape, &wall_pose, 1, &wall));
  CHECK(wall == 0);
  OK(lagcomp_history_add_static(history, &wall_shape, &wall_pose, 1, NULL));

  /* Nothing recorded yet. */
  double oldest = 0.0, newest = 0.0;
  EXPECT(LAGCOMP_REWIND, lagcomp_history_window(history, &oldest, &newest));

  /* Thirty-two ticks of the three entities. Bones in a malloc'd (16-byte aligned) array:
   * read in place. */
  uint64_t entities[3] = {shooter, target, crate};
  LagcompEntityState states[3];
  for (int e = 0; e < 3; e++) {
    states[e].flags = LAGCOMP_STATE_ALIVE | LAGCOMP_STATE_LAG_COMPENSATED;
    states[e].layers = 1;
    states[e].user = (uint16_t)e;
    states[e].reserved = 0;
  }
  LagcompBoneTransform *bones = malloc(7 * sizeof *bones);
  for (uint32_t tick = 0; tick < 32; tick++) {
    double t = time_of(tick);
    soldier_bones(0.0f, 0.0f, bones);
    soldier_bones(target_x(t), 10.0f, bones + BONES);
    memset(&bones[6], 0, sizeof bones[6]);
    bones[6].rotation = identity();
    bones[6].translation = v3(5.0f, 0.5f, 5.0f);
    bones[6].scale = v3(1.0f, 1.0f, 1.0f);
    /* States may be null: every entity alive, compensated, layer 1. */
    OK(lagcomp_history_record_tick(history, tick, t, entities, tick % 2 ? NULL : states, 3,
                                   bones, 7));
  }
  /* Refused ticks change nothing. */
  EXPECT(LAGCOMP_OUT_OF_ORDER, lagcomp_history_record_tick(history, 31, 1.0, entities, states, 3, bones, 7));
  EXPECT(LAGCOMP_NOT_FINITE, lagcomp_history_record_tick(history, 40, NAN, entities, states, 3, bones, 7));
  EXPECT(LAGCOMP_BAD_LENGTH, lagcomp_history_record_tick(history, 40, 0.7, entities, states, 3, bones, 6));
  EXPECT(LAGCOMP_NULL_POINTER, lagcomp_history_record_tick(history, 40, 0.7, NULL, states, 3, bones, 7));
  uint64_t stranger[3] = {shooter, target, 777};
  EXPECT(LAGCOMP_UNKNOWN_ENTITY, lagcomp_history_record_tick(history, 40, 0.7, stranger, states, 3, bones, 7));
  states[0].flags = 64;
  EXPECT(LAGCOMP_INVALID_ARGUMENT, lagcomp_history_record_tick(history, 40, 0.7, entities, states, 3, bones, 7));
  states[0].flags = LAGCOMP_STATE_ALIVE | LAGCOMP_STATE_LAG_COMPENSATED;
  OK(lagcomp_history_window(history, &oldest, &newest));
  CHECK(newest == time_of(31));
  EXPECT(LAGCOMP_NULL_POINTER, lagcomp_history_window(history, NULL, &newest));

  /* Queries at tick 20, as the shooter's client drew it. */
  LagcompQuery query;
  EXPECT(LAGCOMP_NULL_POINTER, lagcomp_query_default(NULL));
  OK(lagcomp_query_default(&query));
  query.target = LAGCOMP_TARGET_TICKS;
  query.from_tick = 20;
  query.to_tick = 21;
  query.fraction = 0.0f;
  query.ignore = &shooter;
  query.ignore_count = 1;
  float head_x = target_x(time_of(20));
  LagcompRay ray = {v3(0.0f, 1.7f, 0.0f), v3(head_x, 0.0f, 10.0f), 100.0f};
  LagcompTrace trace;
  OK(lagcomp_history_ray(history, &query, &ray, &trace));
  CHECK(trace.has_hit == 1 && trace.hit.entity == target && trace.hit.hitbox == 2);
  CHECK(trace.hit.zone == LAGCOMP_ZONE_HEAD && trace.hit.sample.kind == LAGCOMP_SAMPLE_EXACT);
  CHECK(fabsf(trace.hit.distance - (sqrtf(head_x * head_x + 100.0f) - 0.12f)) < 1e-3f);
  CHECK(trace.rewind.time == time_of(20));
  /* The same ray against the present misses: the target moved on. */
  LagcompQuery now = query;
  now.target = LAGCOMP_TARGET_TIME;
  now.time = time_of(31);
  OK(lagcomp_history_ray(history, &now, &ray, &trace));
  CHECK(trace.has_hit == 0);
  /* A thick trace reaches it. */
  OK(lagcomp_history_sweep(history, &now, &ray, 0.5f, &trace));
  CHECK(trace.has_hit == 1 && trace.hit.entity == target);
  EXPECT(LAGCOMP_INVALID_ARGUMENT, lagcomp_history_sweep(history, &now, &ray, -1.0f, &trace));
  EXPECT(LAGCOMP_NOT_FINITE, lagcomp_history_sweep(history, &now, &ray, NAN, &trace));
  /* Errors: bad ray, bad query, out of the window. */
  LagcompRay bad_ray = ray;
  bad_ray.direction = v3(0.0f, 0.0f, 0.0f);
  EXPECT(LAGCOMP_INVALID_ARGUMENT, lagcomp_history_ray(history, &query, &bad_ray, &trace));
  bad_ray.direction = v3(NAN, 0.0f, 1.0f);
  EXPECT(LAGCOMP_NOT_FINITE, lagcomp_history_ray(history, &query, &bad_ray, &trace));
  EXPECT(LAGCOMP_NULL_POINTER, lagcomp_history_ray(history, NULL, &ray, &trace));
  EXPECT(LAGCOMP_NULL_POINTER, lagcomp_history_ray(history, &query, &ray, NULL));
  LagcompQuery bad = query;
  bad.struct_size = 8;
  EXPECT(LAGCOMP_BAD_LENGTH, lagcomp_history_ray(history, &bad, &ray, &trace));
  bad = query;
  bad.target = 9;
  EXPECT(LAGCOMP_INVALID_ARGUMENT, lagcomp_history_ray(history, &bad, &ray, &trace));
  bad = now;
  bad.time = 5.0;
  EXPECT(LAGCOMP_REWIND, lagcomp_history_ray(history, &bad, &ray, &trace));
  bad.window_policy = LAGCOMP_WINDOW_CLAMP;
  OK(lagcomp_history_ray(history, &bad, &ray, &trace));
  CHECK(trace.rewind.clamped == 1 && trace.rewind.time == time_of(31));
  bad = query;
  bad.fraction = 2.0f;
  EXPECT(LAGCOMP_INVALID_ARGUMENT, lagcomp_history_ray(history, &bad, &ray, &trace));
  bad = now;
  bad.target = LAGCOMP_TARGET_LATENCY;
  bad.latency = 11.0 / TICK_RATE;
  OK(lagcomp_history_ray(history, &bad, &ray, &trace));
  CHECK(trace.has_hit == 1 && trace.rewind.time == time_of(20));

  /* A penetrating trace through the target's head and chest from above, into a buffer
   * too small, then one large enough. */
  LagcompRay down = {v3(head_x, 3.0f, 10.0f), v3(0.0f, -1.0f, 0.0f), 10.0f};
  LagcompHit hits[4];
  size_t count = 0;
  EXPECT(LAGCOMP_BUFFER_TOO_SMALL,
         lagcomp_history_trace_all(history, &query, &down, 0.0f, hits, 1, &count, NULL));
  CHECK(count == 3 && hits[0].hitbox == 2);
  EXPECT(LAGCOMP_BUFFER_TOO_SMALL,
         lagcomp_history_trace_all(history, &query, &down, 0.0f, NULL, 0, &count, NULL));
  CHECK(count == 3);
  OK(lagcomp_history_trace_all(history, &query, &down, 0.0f, hits, 4, &count, &trace));
  CHECK(count == 3 && hits[0].hitbox == 2 && hits[1].hitbox == 1 && hits[2].hitbox == 0);
  CHECK(hits[0].distance < hits[1].distance && hits[1].distance < hits[2].distance);
  CHECK(trace.has_hit == 1 && trace.hit.hitbox == 2);
  EXPECT(LAGCOMP_NULL_POINTER,
         lagcomp_history_trace_all(history, &query, &down, 0.0f, hits, 4, NULL, NULL));

  /* Overlaps: a grenade at the target's feet, and a box around the crate. */
  LagcompVec3 blast = {head_x, 0.9f, 10.0f};
  LagcompOverlap overlaps[4];
  OK(lagcomp_history_overlap_sphere(history, &query, &blast, 0.5f, overlaps, 4, &count));
  CHECK(count == 2 && overlaps[0].entity == target && overlaps[0].hitbox == 0);
  CHECK(overlaps[0].distance == 0.0f);
  EXPECT(LAGCOMP_BUFFER_TOO_SMALL,
         lagcomp_history_overlap_sphere(history, &query, &blast, 0.5f, overlaps, 1, &count));
  CHECK(count == 2);
  EXPECT(LAGCOMP_INVALID_ARGUMENT,
         lagcomp_history_overlap_sphere(history, &query, &blast, -0.5f, overlaps, 4, &count));
  LagcompObb crate_box = {v3(5.0f, 0.5f, 5.0f), identity(), v3(1.0f, 1.0f, 1.0f)};
  OK(lagcomp_history_overlap_box(history, &query, &crate_box, overlaps, 4, &count));
  CHECK(count == 1 && overlaps[0].entity == crate && overlaps[0].zone == LAGCOMP_ZONE_CUSTOM &&
        overlaps[0].zone_custom == 5);
  crate_box.rotation.w = 0.5f;
  EXPECT(LAGCOMP_INVALID_ARGUMENT,
         lagcomp_history_overlap_box(history, &query, &crate_box, overlaps, 4, &count));

  /* One entity at tick 20. */
  LagcompBoneTransform then[BONES];
  LagcompEntitySample sample;
  size_t bone_count = 0;
  OK(lagcomp_history_entity_at(history, &query, target, LAGCOMP_ENTITY_AS_HIT, then, BONES,
                               &bone_count, &sample));
  CHECK(sample.found == 1 && bone_count == BONES && then[2].translation.x == head_x);
  CHECK(sample.state.user == 1 && sample.sample.kind == LAGCOMP_SAMPLE_EXACT);
  OK(lagcomp_history_entity_at(history, &query, target, LAGCOMP_ENTITY_AS_RECORDED, then,
                               BONES, &bone_count, &sample));
  EXPECT(LAGCOMP_BUFFER_TOO_SMALL,
         lagcomp_history_entity_at(history, &query, target, LAGCOMP_ENTITY_AS_HIT, then, 1,
                                   &bone_count, &sample));
  CHECK(bone_count == BONES);
  EXPECT(LAGCOMP_UNKNOWN_ENTITY,
         lagcomp_history_entity_at(history, &query, 4242, LAGCOMP_ENTITY_AS_HIT, then, BONES,
                                   &bone_count, &sample));
  EXPECT(LAGCOMP_INVALID_ARGUMENT,
         lagcomp_history_entity_at(history, &query, target, 7, then, BONES, &bone_count,
                                   &sample));

  /* The validator. */
  LagcompValidator *validator = NULL;
  EXPECT(LAGCOMP_RULES, lagcomp_validator_new(history, "[weapons.rifle]\nid = -1\n", &validator));
  EXPECT(LAGCOMP_NULL_POINTER, lagcomp_validator_new(history, NULL, &validator));
  OK(lagcomp_validator_new(history, RULES, &validator));
  LagcompValidator *second = NULL;
  EXPECT(LAGCOMP_INVALID_STATE, lagcomp_validator_new(history, RULES, &second));
  EXPECT(LAGCOMP_INVALID_STATE, lagcomp_validator_close_audit_log(validator));
  EXPECT(LAGCOMP_IO, lagcomp_validator_open_audit_log(validator, bad_path));
  OK(lagcomp_validator_open_audit_log(validator, audit_path));

  LagcompParticipant shooter_p = {1, 2, v3(0.0f, 0.0f, 1.0f)};
  LagcompParticipant target_p = {2, 2, v3(0.0f, 0.0f, -1.0f)};
  OK(lagcomp_validator_register(validator, shooter, &shooter_p));
  OK(lagcomp_validator_register(validator, target, &target_p));
  EXPECT(LAGCOMP_NULL_POINTER, lagcomp_validator_register(validator, target, NULL));
  LagcompParticipant bad_p = {2, 2, v3(NAN, 0.0f, 1.0f)};
  EXPECT(LAGCOMP_NOT_FINITE, lagcomp_validator_register(validator, target, &bad_p));
  LagcompClientTiming timing = {0.1, 0.005, 0.075};
  OK(lagcomp_validator_set_timing(validator, shooter, &timing));
  LagcompClientTiming bad_timing = {-0.1, 0.005, 0.075};
  EXPECT(LAGCOMP_INVALID_ARGUMENT, lagcomp_validator_set_timing(validator, shooter, &bad_timing));
  bad_timing.srtt = INFINITY;
  EXPECT(LAGCOMP_NOT_FINITE, lagcomp_validator_set_timing(validator, shooter, &bad_timing));

  /* The claims; each arrives 0.125 s (half the RTT plus the interpolation delay) after
   * the moment it claims. */
  LagcompVerdict verdict;
  LagcompShotClaim claims[7];
  claims[0] = claim_at(shooter, 1, 20, v3(target_x(time_of(20)), 1.7f, 10.0f));
  claims[0].hit_flags = LAGCOMP_CLAIM_HIT | LAGCOMP_CLAIM_HITBOX;
  claims[0].target = target;
  claims[0].hitbox = 2;
  claims[1] = claims[0]; /* replayed */
  claims[2] = claim_at(shooter, 2, 22, v3(target_x(time_of(31)), 1.35f, 10.0f)); /* miss */
  claims[3] = claim_at(shooter, 3, 24, v3(-3.0f, 1.5f, 20.0f)); /* into the wall */
  claims[4] = claim_at(shooter, 4, 26, v3(0.0f, 0.0f, 1.0f));
  claims[4].direction.x = NAN; /* non_finite */
  claims[5] = claim_at(shooter, 5, 2, v3(0.0f, 1.7f, 10.0f)); /* far too old */
  claims[6] = claim_at(crate, 1, 26, v3(0.0f, 1.7f, 10.0f)); /* unknown shooter */
  for (int i = 0; i < 7; i++) {
    double received = time_of(claims[i].from_tick) + 0.125;
    if (i == 5) received = time_of(28) + 0.125;
    OK(lagcomp_validator_validate(validator, &claims[i], received, &verdict));
    print_verdict(&verdict);
    if (i == 0) {
      CHECK(verdict.outcome == LAGCOMP_OUTCOME_CONFIRMED && verdict.target == target &&
            verdict.hitbox == 2 && verdict.damage_multiplier == 4.0f);
      CHECK(verdict.basis.sample.kind == LAGCOMP_SAMPLE_EXACT && verdict.basis.rewound == 1);
    }
    if (i == 1) CHECK(verdict.outcome == LAGCOMP_OUTCOME_REJECTED && verdict.reason_code == 201);
    if (i == 3) CHECK(verdict.outcome == LAGCOMP_OUTCOME_BLOCKED && verdict.wall == 0);
  }
  LagcompShotClaim bad_claim = claims[0];
  bad_claim.struct_size = 16;
  EXPECT(LAGCOMP_BAD_LENGTH, lagcomp_validator_validate(validator, &bad_claim, 1.0, &verdict));
  bad_claim = claims[0];
  bad_claim.render_kind = 5;
  EXPECT(LAGCOMP_INVALID_ARGUMENT, lagcomp_validator_validate(validator, &bad_claim, 1.0, &verdict));
  bad_claim = claims[0];
  bad_claim.hit_flags = LAGCOMP_CLAIM_POINT;
  EXPECT(LAGCOMP_INVALID_ARGUMENT, lagcomp_validator_validate(validator, &bad_claim, 1.0, &verdict));
  EXPECT(LAGCOMP_NOT_FINITE, lagcomp_validator_validate(validator, &claims[0], NAN, &verdict));
  EXPECT(LAGCOMP_NULL_POINTER, lagcomp_validator_validate(validator, NULL, 1.0, &verdict));

  /* Despawn and forget the target; the history still answers for its past. */
  OK(lagcomp_validator_forget(validator, target));
  OK(lagcomp_history_despawn(history, target));
  EXPECT(LAGCOMP_UNKNOWN_ENTITY, lagcomp_history_despawn(history, target));
  OK(lagcomp_history_ray(history, &query, &ray, &trace));
  CHECK(trace.has_hit == 1 && trace.hit.entity == target);
  uint64_t two[2] = {shooter, crate};
  OK(lagcomp_history_record_tick(history, 32, time_of(32), two, states, 2, bones, 4));

  OK(lagcomp_validator_close_audit_log(validator));
  OK(lagcomp_history_finish_match_recording(history));
  OK(lagcomp_validator_free(validator));
  EXPECT(LAGCOMP_STALE_HANDLE, lagcomp_validator_free(validator));
  EXPECT(LAGCOMP_STALE_HANDLE, lagcomp_validator_validate(validator, &claims[0], 1.0, &verdict));
  EXPECT(LAGCOMP_STALE_HANDLE, lagcomp_validator_register(validator, shooter, &shooter_p));
  EXPECT(LAGCOMP_STALE_HANDLE, lagcomp_validator_forget(validator, shooter));
  EXPECT(LAGCOMP_STALE_HANDLE, lagcomp_validator_set_timing(validator, shooter, &timing));
  EXPECT(LAGCOMP_STALE_HANDLE, lagcomp_validator_open_audit_log(validator, audit_path));
  EXPECT(LAGCOMP_STALE_HANDLE, lagcomp_validator_close_audit_log(validator));
  OK(lagcomp_history_free(history));
  EXPECT(LAGCOMP_STALE_HANDLE, lagcomp_history_ray(history, &query, &ray, &trace));
  EXPECT(LAGCOMP_STALE_HANDLE, lagcomp_history_record_tick(history, 40, 0.7, entities, states, 3, bones, 7));
  free(bones);

  if (failures > 0) {
    fprintf(stderr, "%d checks failed\n", failures);
    return 1;
  }
  printf("ok\n");
  return 0;
}
