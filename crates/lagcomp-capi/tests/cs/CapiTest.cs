// The C interface through P/Invoke, as a Unity server calls a native plugin: bindings
// declared with [DllImport], bones recorded from a pinned array without copying, a claim
// validated and its verdict read. Prints "verdict ..." lines like tests/c/capi_test.c and
// "ok" at the end; exits 1 on a failed check.
using System;
using System.Runtime.InteropServices;

[StructLayout(LayoutKind.Sequential)]
struct LagcompVec3 { public float x, y, z; public LagcompVec3(float x, float y, float z) { this.x = x; this.y = y; this.z = z; } }

[StructLayout(LayoutKind.Sequential)]
struct LagcompQuat { public float x, y, z, w; public static LagcompQuat Identity => new LagcompQuat { w = 1f }; }

[StructLayout(LayoutKind.Sequential)]
struct LagcompPose { public LagcompVec3 translation; public LagcompQuat rotation; }

[StructLayout(LayoutKind.Sequential)]
struct LagcompShape { public uint kind, axis; public float radius, half_height; public LagcompVec3 half_extents; }

[StructLayout(LayoutKind.Sequential)]
struct LagcompHitbox
{
    public ushort id, bone, zone, zone_custom;
    public LagcompPose offset;
    public LagcompShape shape;
    public IntPtr name;
}

[StructLayout(LayoutKind.Sequential)]
struct LagcompHistoryConfig { public uint struct_size, reserved; public double tick_rate, max_rewind; }

// 48 bytes, as in lagcomp.h: rotation, translation, scale, padding.
[StructLayout(LayoutKind.Sequential)]
struct LagcompBoneTransform
{
    public LagcompQuat rotation;
    public LagcompVec3 translation;
    public LagcompVec3 scale;
    public float padding0, padding1;
}

[StructLayout(LayoutKind.Sequential)]
struct LagcompParticipant { public ushort team, aim_bone; public LagcompVec3 aim_forward; }

[StructLayout(LayoutKind.Sequential)]
struct LagcompClientTiming { public double srtt, rttvar, interp_delay; }

[StructLayout(LayoutKind.Sequential)]
struct LagcompShotClaim
{
    public uint struct_size, render_kind;
    public ulong shooter;
    public uint seq;
    public ushort weapon, hit_flags;
    public uint from_tick, to_tick;
    public float fraction;
    public uint reserved;
    public double render_time;
    public LagcompVec3 origin, direction;
    public ulong target;
    public ushort hitbox, reserved2;
    public LagcompVec3 point;
}

[StructLayout(LayoutKind.Sequential)]
struct LagcompSample
{
    public double time;
    public byte kind, nearest_reason;
    public ushort reserved;
    public uint from_tick, to_tick;
    public float alpha;
}

[StructLayout(LayoutKind.Sequential)]
struct LagcompVerdictBasis
{
    public double received_at, requested_time, time_used, oldest, newest, shooter_latency, interp_delay;
    public LagcompSample sample;
    public byte rewound, fallback, r0, r1, r2, r3, r4, r5;
}

[StructLayout(LayoutKind.Sequential)]
struct LagcompVerdict
{
    public uint outcome;
    public ushort reason_code, weapon;
    public ulong shooter;
    public uint seq;
    public ushort hitbox, zone;
    public ulong target;
    public ushort zone_custom;
    public byte by_leeway, reserved;
    public float damage_multiplier, distance;
    public LagcompVec3 point;
    public uint wall;
    public float wall_distance;
    public IntPtr label;
    public LagcompVerdictBasis basis;
}

static class Lagcomp
{
    const string Lib = "lagcomp_capi";
    public const uint AbiVersion = 2;
    public const int Ok = 0;
    public const uint OutcomeConfirmed = 0;

    [DllImport(Lib)] public static extern uint lagcomp_abi_version();
    [DllImport(Lib)] public static extern IntPtr lagcomp_last_error();
    [DllImport(Lib)] public static extern int lagcomp_history_config_default(out LagcompHistoryConfig config);
    [DllImport(Lib)] public static extern int lagcomp_history_new(ref LagcompHistoryConfig config, out IntPtr history);
    [DllImport(Lib)] public static extern int lagcomp_history_free(IntPtr history);
    [DllImport(Lib)] public static extern int lagcomp_history_spawn(IntPtr history, ushort boneCount, [In] LagcompHitbox[] hitboxes, UIntPtr hitboxCount, out ulong entity);
    [DllImport(Lib)] public static extern int lagcomp_history_record_tick(IntPtr history, uint tick, double time, [In] ulong[] entities, IntPtr states, UIntPtr entityCount, IntPtr bones, UIntPtr boneCount);
    [DllImport(Lib)] public static extern int lagcomp_validator_new(IntPtr history, [MarshalAs(UnmanagedType.LPUTF8Str)] string rulesToml, out IntPtr validator);
    [DllImport(Lib)] public static extern int lagcomp_validator_free(IntPtr validator);
    [DllImport(Lib)] public static extern int lagcomp_validator_register(IntPtr validator, ulong entity, ref LagcompParticipant participant);
    [DllImport(Lib)] public static extern int lagcomp_validator_set_timing(IntPtr validator, ulong shooter, ref LagcompClientTiming timing);
    [DllImport(Lib)] public static extern int lagcomp_validator_validate(IntPtr validator, ref LagcompShotClaim claim, double receivedAt, out LagcompVerdict verdict);

    public static void Check(int status, string what)
    {
        if (status != Ok)
            throw new Exception(what + " returned " + status + ": " + Marshal.PtrToStringAnsi(lagcomp_last_error()));
    }
}

static class CapiTest
{
    const double TickRate = 64.0;
    const string Rules =
        "[weapons.rifle]\nid = 1\nmax_range = 250.0\nmin_interval = 0.02\n" +
        "aim_tolerance_deg = 30.0\norigin_tolerance = 1.0\nhit_leeway = 1.25\n" +
        "hit_leeway_min = 0.05\nmax_rewind = 0.35\n" +
        "damage = { head = 4.0, torso = 1.0, limb = 0.75 }\n";

    static double TimeOf(uint tick) { return tick / TickRate; }
    static float TargetX(double t) { return (float)(2.0 * t); }

    static LagcompHitbox Hitbox(ushort id, ushort zone, LagcompShape shape, IntPtr name)
    {
        return new LagcompHitbox { id = id, bone = id, zone = zone, offset = new LagcompPose { rotation = LagcompQuat.Identity }, shape = shape, name = name };
    }

    static void Soldier(LagcompBoneTransform[] bones, int at, float x, float z)
    {
        float[] heights = { 1.0f, 1.35f, 1.7f };
        for (int b = 0; b < 3; b++)
            bones[at + b] = new LagcompBoneTransform
            {
                rotation = LagcompQuat.Identity,
                translation = new LagcompVec3(x, heights[b], z),
                scale = new LagcompVec3(1f, 1f, 1f),
            };
    }

    static int Main()
    {
        if (Marshal.SizeOf(typeof(LagcompBoneTransform)) != 48 || Marshal.SizeOf(typeof(LagcompVerdict)) != 160
            || Marshal.SizeOf(typeof(LagcompShotClaim)) != 96)
        {
            Console.Error.WriteLine("struct sizes differ from lagcomp.h");
            return 1;
        }
        if (Lagcomp.lagcomp_abi_version() != Lagcomp.AbiVersion)
        {
            Console.Error.WriteLine("ABI version mismatch");
            return 1;
        }
        LagcompHistoryConfig config;
        Lagcomp.Check(Lagcomp.lagcomp_history_config_default(out config), "config_default");
        config.tick_rate = TickRate;
        IntPtr history;
        Lagcomp.Check(Lagcomp.lagcomp_history_new(ref config, out history), "history_new");

        IntPtr pelvis = Marshal.StringToHGlobalAnsi("pelvis");
        IntPtr chest = Marshal.StringToHGlobalAnsi("chest");
        var rig = new[]
        {
            Hitbox(0, 1, new LagcompShape { kind = 1, half_extents = new LagcompVec3(0.2f, 0.1f, 0.15f) }, pelvis),
            Hitbox(1, 1, new LagcompShape { kind = 2, axis = 1, radius = 0.2f, half_height = 0.1f }, chest),
            Hitbox(2, 0, new LagcompShape { kind = 0, radius = 0.12f }, IntPtr.Zero),
        };
        ulong shooter, target;
        Lagcomp.Check(Lagcomp.lagcomp_history_spawn(history, 3, rig, (UIntPtr)3, out shooter), "spawn");
        Lagcomp.Check(Lagcomp.lagcomp_history_spawn(history, 3, rig, (UIntPtr)3, out target), "spawn");
        Marshal.FreeHGlobal(pelvis);
        Marshal.FreeHGlobal(chest);

        // One array of bones for the whole tick, pinned while the library reads it (a
        // NativeArray's pointer would be passed the same way).
        var entities = new[] { shooter, target };
        var bones = new LagcompBoneTransform[6];
        var pin = GCHandle.Alloc(bones, GCHandleType.Pinned);
        try
        {
            for (uint tick = 0; tick < 32; tick++)
            {
                double t = TimeOf(tick);
                Soldier(bones, 0, 0f, 0f);
                Soldier(bones, 3, TargetX(t), 10f);
                Lagcomp.Check(Lagcomp.lagcomp_history_record_tick(history, tick, t, entities, IntPtr.Zero,
                    (UIntPtr)2, pin.AddrOfPinnedObject(), (UIntPtr)6), "record_tick");
            }
        }
        finally
        {
            pin.Free();
        }

        IntPtr validator;
        Lagcomp.Check(Lagcomp.lagcomp_validator_new(history, Rules, out validator), "validator_new");
        var shooterP = new LagcompParticipant { team = 1, aim_bone = 2, aim_forward = new LagcompVec3(0f, 0f, 1f) };
        var targetP = new LagcompParticipant { team = 2, aim_bone = 2, aim_forward = new LagcompVec3(0f, 0f, -1f) };
        Lagcomp.Check(Lagcomp.lagcomp_validator_register(validator, shooter, ref shooterP), "register");
        Lagcomp.Check(Lagcomp.lagcomp_validator_register(validator, target, ref targetP), "register");
        var timing = new LagcompClientTiming { srtt = 0.1, rttvar = 0.005, interp_delay = 0.075 };
        Lagcomp.Check(Lagcomp.lagcomp_validator_set_timing(validator, shooter, ref timing), "set_timing");

        var claim = new LagcompShotClaim
        {
            struct_size = (uint)Marshal.SizeOf(typeof(LagcompShotClaim)),
            render_kind = 0,
            shooter = shooter,
            seq = 1,
            weapon = 1,
            hit_flags = 1 | 2,
            from_tick = 20,
            to_tick = 21,
            origin = new LagcompVec3(0f, 1.7f, 0f),
            direction = new LagcompVec3(TargetX(TimeOf(20)), 0f, 10f),
            target = target,
            hitbox = 2,
        };
        LagcompVerdict verdict;
        Lagcomp.Check(Lagcomp.lagcomp_validator_validate(validator, ref claim, TimeOf(20) + 0.125, out verdict), "validate");
        string label = Marshal.PtrToStringAnsi(verdict.label);
        Console.WriteLine(string.Format(System.Globalization.CultureInfo.InvariantCulture,
            "verdict seq={0} label={1} code={2} target={3} hitbox={4} damage={5} wall={6}",
            verdict.seq, label, verdict.reason_code,
            verdict.outcome == Lagcomp.OutcomeConfirmed ? verdict.target : 0UL,
            verdict.hitbox, verdict.damage_multiplier, verdict.wall));
        bool good = verdict.outcome == Lagcomp.OutcomeConfirmed && verdict.target == target
            && verdict.hitbox == 2 && verdict.damage_multiplier == 4f && label == "confirmed"
            && verdict.basis.rewound == 1 && verdict.basis.time_used == TimeOf(20);

        Lagcomp.Check(Lagcomp.lagcomp_validator_free(validator), "validator_free");
        Lagcomp.Check(Lagcomp.lagcomp_history_free(history), "history_free");
        // A freed handle is refused, not followed.
        good &= Lagcomp.lagcomp_history_free(history) == 5;
        if (!good)
        {
            Console.Error.WriteLine("the verdict or the stale handle check is wrong");
            return 1;
        }
        Console.WriteLine("ok");
        return 0;
    }
}
