"""What a person meets in Slack when they act, in English and Japanese: the alert's buttons, `/restart-notebook`
(help, queued, choose), the refusals and their reasons (deny.*), the buttons' acknowledgements, and the status table.
"""

from __future__ import annotations

from typing import Final

from shared.core.messages.formatting import Lang

COMMANDS: Final[dict[str, dict[Lang, str]]] = {
    # ---- buttons ------------------------------------------------------------------------------
    "button.restart": {"en": "Restart now", "ja": "今すぐ再起動"},
    # A pause holds the owner's /restart-notebook too, not only automatic restarts (organizers may override).
    "button.pause": {"en": "Pause restarts", "ja": "再起動を一時停止"},
    "button.resume": {"en": "Resume restarts", "ja": "再起動を再開"},
    "button.stop": {"en": "Stop instance", "ja": "インスタンスを停止"},
    "button.stop.confirm": {
        "en": "Stop {instance}? The participant loses everything in memory.",
        "ja": "{instance} を停止しますか? メモリ上の作業はすべて失われます。",
    },
    "button.stop_open": {"en": "Stop (owner may start)", "ja": "停止 (本人の再開可)"},
    "button.stop_open.confirm": {
        "en": "Stop {instance}? The participant loses everything in memory, and can start it again with "
        "/restart-notebook.",
        "ja": "{instance} を停止しますか? メモリ上の作業はすべて失われます。参加者は /restart-notebook で再び起動できます。",
    },
    "button.start": {"en": "Start instance", "ja": "インスタンスを起動"},
    "button.resize.confirm": {
        "en": "Move {instance} to {machine}? It is stopped and started again: the participant loses everything in memory.",
        "ja": "{instance} を {machine} に変更しますか? 停止して再起動するため、メモリ上の作業はすべて失われます。",
    },
    "button.confirm": {"en": "Yes", "ja": "はい"},
    "button.cancel": {"en": "Cancel", "ja": "キャンセル"},
    # ---- /restart-notebook ---------------------------------------------------------------------
    "cmd.help": {
        "en": "*/restart-notebook* restarts your Workbench notebook when it is stuck (for example after running out of memory).\n"
        "• `/restart-notebook` — restart your notebook (if you have one)\n"
        "• `/restart-notebook NAME` — restart the notebook called NAME (yours; organizers: any)\n"
        "• `/restart-notebook status` — your notebooks (organizers: every notebook)\n"
        "• `/restart-notebook bigger [NAME]` — ask the organizers for a machine with more memory\n"
        "• `/restart-notebook bigger-disk [boot] [NAME]` — ask the organizers for a bigger data (or boot) disk\n"
        "• `/restart-notebook start all` / `stop all` — organizers: every notebook, after a confirmation\n"
        "• `/restart-notebook announce TEXT` — organizers: a DM to every notebook owner, after a confirmation\n"
        "• `/restart-notebook help` — this message\n"
        "A restart takes about a minute; anything only in memory is lost.",
        "ja": "*/restart-notebook* は動かなくなった Workbench ノートブックを再起動します (メモリ不足の後など)。\n"
        "• `/restart-notebook` — 自分のノートブックを再起動\n"
        "• `/restart-notebook 名前` — 指定したノートブックを再起動 (自分のもの。運営はすべて)\n"
        "• `/restart-notebook status` — 自分のノートブックの状態 (運営は全台)\n"
        "• `/restart-notebook bigger [名前]` — メモリの多いマシンを運営に依頼\n"
        "• `/restart-notebook bigger-disk [boot] [名前]` — データ (または boot) ディスクの拡張を運営に依頼\n"
        "• `/restart-notebook start all` / `stop all` — 運営のみ: 確認のうえ全台を起動 / 停止\n"
        "• `/restart-notebook announce 本文` — 運営のみ: 確認のうえ全所有者に DM でお知らせ\n"
        "• `/restart-notebook help` — このヘルプ\n"
        "再起動には 1 分ほどかかり、メモリ上のデータは失われます。",
    },
    "cmd.unusable": {
        "en": ":thinking_face: I couldn't use that ({problem}).\n{help}",
        "ja": ":thinking_face: その入力は使えません ({problem})。\n{help}",
    },
    "cmd.queued": {
        "en": ":arrows_counterclockwise: Restarting *{instance}*… I'll tell you here when it's back (usually about a minute).",
        "ja": ":arrows_counterclockwise: *{instance}* を再起動しています… 復帰したらここでお知らせします (通常 1 分ほど)。",
    },
    "cmd.start_queued": {
        "en": ":arrow_forward: *{instance}* is stopped; starting it… that takes about 2 minutes. I'll tell you here "
        "when it's running.",
        "ja": ":arrow_forward: *{instance}* は停止中のため起動しています… 2 分ほどかかります。起動したらここでお知らせします。",
    },
    # The reads did not finish inside Slack's window: acknowledged at once, answered later through response_url.
    "cmd.looking": {
        "en": ":hourglass_flowing_sand: Looking at your notebook… I'll answer here in a moment.",
        "ja": ":hourglass_flowing_sand: ノートブックを確認しています… まもなくここでお知らせします。",
    },
    "button.looking": {
        "en": ":hourglass_flowing_sand: Checking *{name}*… I'll answer here in a moment.",
        "ja": ":hourglass_flowing_sand: *{name}* を確認しています… まもなくここでお知らせします。",
    },
    "cmd.replayed": {
        "en": ":information_source: This request was already carried out; it is not done twice.",
        "ja": ":information_source: このリクエストはすでに実行済みです。二度は実行しません。",
    },
    "cmd.choose": {
        "en": "You have several notebooks; name the one to restart: {names}",
        "ja": "ノートブックが複数あります。再起動するものを指定してください: {names}",
    },
    # `bigger` asks for a machine; it restarts nothing, and its refusals must not read as a restart's.
    "cmd.choose_bigger": {
        "en": "You have several notebooks; name the one to enlarge: `/restart-notebook bigger NAME` with one of {names}",
        "ja": "ノートブックが複数あります。大きくするものを指定してください: `/restart-notebook bigger 名前` ({names} のいずれか)",
    },
    "cmd.bigger_name_it": {
        "en": "Name the notebook to enlarge: `/restart-notebook bigger NAME`.",
        "ja": "大きくするノートブックを指定してください: `/restart-notebook bigger 名前`",
    },
    "deny.not_yours_bigger": {
        "en": ":no_entry: `{name}` is not your notebook, so you can't ask for a bigger machine for it.",
        "ja": ":no_entry: `{name}` はあなたのノートブックではないため、大きいマシンを依頼できません。",
    },
    "deny.no_email": {
        "en": ":no_entry: Your Slack profile has no email address, so I can't tell which notebook is yours. Ask an organizer.",
        "ja": ":no_entry: Slack プロフィールにメールアドレスがないため、どのノートブックがあなたのものか判断できません。運営に連絡してください。",
    },
    "deny.email_not_plain": {
        "en": ":no_entry: The email address in your Slack profile is not a plain ASCII address, so I can't tell which notebook is yours. Ask an organizer.",
        "ja": ":no_entry: Slack プロフィールのメールアドレスが半角英数字だけのアドレスではないため、どのノートブックがあなたのものか判断できません。運営に連絡してください。",
    },
    "deny.not_member": {
        "en": ":no_entry: This Slack account can't use notebook-medic here: only active members of this workspace can, not bots, deactivated accounts or members of other organizations.",
        "ja": ":no_entry: この Slack アカウントはここで notebook-medic を使えません。使えるのはこのワークスペースの有効なメンバーだけです（ボット、無効化されたアカウント、他の組織のメンバーは使えません）。",
    },
    "deny.unconfirmed_email": {
        "en": ":no_entry: Slack says the email address in your profile is not confirmed yet. Confirm it in Slack, then try again.",
        "ja": ":no_entry: Slack によると、プロフィールのメールアドレスがまだ確認されていません。Slack で確認してから、もう一度お試しください。",
    },
    "deny.no_instance": {
        "en": ":no_entry: I found no notebook owned by {email}. Ask an organizer if that's wrong.",
        "ja": ":no_entry: {email} が所有するノートブックが見つかりません。誤りであれば運営に連絡してください。",
    },
    "deny.not_found": {
        "en": ":no_entry: There is no notebook called `{name}`.",
        "ja": ":no_entry: `{name}` というノートブックはありません。",
    },
    "deny.ambiguous": {
        "en": ":no_entry: More than one notebook is called `{name}` (zones: {zones}); ask an organizer.",
        "ja": ":no_entry: `{name}` という名前のノートブックが複数あります (ゾーン: {zones})。運営に連絡してください。",
    },
    "deny.not_yours": {
        "en": ":no_entry: `{name}` is not your notebook, so you can't restart it.",
        "ja": ":no_entry: `{name}` はあなたのノートブックではないため再起動できません。",
    },
    "deny.not_restartable": {
        "en": ":no_entry: `{name}` is {state}, not running, so it can't be restarted now.",
        "ja": ":no_entry: `{name}` は {state} 状態で起動していないため、今は再起動できません。",
    },
    "deny.held": {
        "en": ":no_entry: `{name}` was stopped by the organizers{since}, and only they can start it again; ask one "
        "of them if you need it.",
        "ja": ":no_entry: `{name}` は運営が停止しました{since}。再開できるのは運営だけです。必要な場合は運営に相談してください。",
    },
    "deny.held.since": {
        "en": " at {time}",
        "ja": " ({time})",
    },
    "deny.stopping": {
        "en": ":hourglass_flowing_sand: `{name}` is stopping right now. Once it has stopped (about a minute), "
        "`/restart-notebook` starts it again.",
        "ja": ":hourglass_flowing_sand: `{name}` は停止処理中です。停止が終わったら (1 分ほど) `/restart-notebook` "
        "で再び起動できます。",
    },
    "deny.paused": {
        "en": ":no_entry: Restarts of `{name}` are paused (after a crash loop, or by an organizer); ask an organizer "
        "if you need it restarted.",
        "ja": ":no_entry: `{name}` の再起動は一時停止中です (クラッシュループ後、または運営による停止)。"
        "再起動が必要な場合は運営に相談してください。",
    },
    # Nothing is queued for these: no promise of a follow-up.
    "deny.already": {
        "en": ":hourglass_flowing_sand: `{name}` is already restarting (since {time}), so I queued nothing more. "
        "Try your notebook in a minute; if it isn't back by then, ask again.",
        "ja": ":hourglass_flowing_sand: `{name}` はすでに再起動中です ({time} から)。追加の再起動は行いません。"
        "1 分ほどしてからノートブックを確認し、戻っていなければもう一度お試しください。",
    },
    "deny.starting": {
        "en": ":hourglass_flowing_sand: `{name}` is {state} right now, so I queued no restart. "
        "Try your notebook in a minute; if it isn't back by then, ask again.",
        "ja": ":hourglass_flowing_sand: `{name}` は現在 {state} 状態のため、再起動は行いません。"
        "1 分ほどしてからノートブックを確認し、戻っていなければもう一度お試しください。",
    },
    "deny.too_soon": {
        "en": ":hourglass: `{name}` was restarted a moment ago; you can restart it again in {seconds} s.",
        "ja": ":hourglass: `{name}` は先ほど再起動したばかりです。{seconds} 秒後にもう一度お試しください。",
    },
    "deny.too_soon_unconfirmed": {
        "en": ":hourglass: A restart of `{name}` was sent at {time} and not yet seen to finish; if your notebook "
        "isn't back, you can restart it again in {seconds} s.",
        "ja": ":hourglass: `{name}` の再起動を {time} に送信しましたが、まだ完了を確認できていません。"
        "ノートブックが戻らない場合は、{seconds} 秒後にもう一度再起動できます。",
    },
    "queue.unconfirmed": {
        "en": ":warning: I couldn't confirm in time that the request for *{name}* was queued: it may or may not be carried out. If it was, I'll tell you here when it's done; if you hear nothing within a few minutes, please try again.",
        "ja": ":warning: *{name}* へのリクエストがキューに入ったことを時間内に確認できませんでした。実行される場合も、されない場合もあります。キューに入っていれば、終わったときにここでお知らせします。数分たっても連絡がなければ、もう一度お試しください。",
    },
    # The same, for a request handed on unread (reads past their share): no notebook is named yet.
    "queue.unconfirmed_yours": {
        "en": ":warning: I couldn't confirm in time that your request was queued: it may or may not be carried out. If it was, I'll tell you here when it's done; if you hear nothing within a few minutes, please try again.",
        "ja": ":warning: リクエストがキューに入ったことを時間内に確認できませんでした。実行される場合も、されない場合もあります。キューに入っていれば、終わったときにここでお知らせします。数分たっても連絡がなければ、もう一度お試しください。",
    },
    "deny.unavailable": {
        "en": ":warning: I couldn't reach {service} just now; please try again in a minute.",
        "ja": ":warning: {service} に接続できませんでした。1 分ほどしてからもう一度お試しください。",
    },
    # A service answered with an error (not merely slowly): nothing was done, and the answer names what failed.
    "deny.failed": {
        "en": ":warning: I couldn't reach {service} ({error}), so nothing was done; please try again in a minute.",
        "ja": ":warning: {service} がエラーを返しました ({error})。何も実行していません。1 分ほどしてからもう一度お試しください。",
    },
    # The reads took Slack's whole window, so no publish was started: nothing failed, and nothing was queued.
    "deny.no_time": {
        "en": ":hourglass: Looking up your notebook took all the time Slack gives me to answer, so I did not queue "
        "anything (nothing failed, and nothing was done). Please ask again in a moment.",
        "ja": ":hourglass: ノートブックの確認に Slack の待ち時間をすべて使ってしまったため、リクエストはキューに入れていません "
        "(エラーではなく、何も実行していません)。少ししてからもう一度お試しください。",
    },
    # status and bigger, whose reads did not finish inside Slack's window: nothing failed, and nothing was done.
    "deny.slow": {
        "en": ":hourglass: {service} is taking longer to answer than Slack lets me wait, so I have no answer yet "
        "(nothing failed, and nothing was done). Please ask again in a moment.",
        "ja": ":hourglass: {service} の応答が Slack の待ち時間を超えたため、まだお答えできません "
        "(エラーではなく、何も実行していません)。少ししてからもう一度お試しください。",
    },
    "deny.organizers_only": {
        "en": ":no_entry: Only organizers can use these buttons.",
        "ja": ":no_entry: このボタンは運営のみ使用できます。",
    },
    "deny.bulk_organizers_only": {
        "en": ":no_entry: `{command}` starts or stops every notebook of the contest: only organizers can. For your own "
        "notebook, `/restart-notebook` restarts it (or starts it when it is stopped).",
        "ja": ":no_entry: `{command}` はコンテストの全ノートブックを起動・停止するもので、運営のみ使用できます。"
        "ご自分のノートブックは `/restart-notebook` で再起動 (停止中なら起動) できます。",
    },
    "button.ack.restart": {"en": "Restarting `{name}`…", "ja": "`{name}` を再起動しています…"},
    "button.ack.pause": {"en": "Pausing restarts of `{name}`…", "ja": "`{name}` の再起動を一時停止しています…"},
    "button.ack.resume": {"en": "Resuming restarts of `{name}`…", "ja": "`{name}` の再起動を再開しています…"},
    "button.ack.stop": {"en": "Stopping `{name}`…", "ja": "`{name}` を停止しています…"},
    "button.ack.start": {"en": "Starting `{name}`…", "ja": "`{name}` を起動しています…"},
    "status.title.mine": {"en": "Your notebooks", "ja": "あなたのノートブック"},
    "status.title.fleet": {
        "en": "All notebooks ({count}), those needing attention first",
        "ja": "全ノートブック ({count} 台、要対応のものから)",
    },
    "status.none": {"en": "No notebooks found.", "ja": "ノートブックが見つかりません。"},
    # The count is the alert's: the current run of automatic restarts (policy.crashloop_count), not every restart.
    "status.header": {
        "en": "NAME | STATE | HEALTH | LAST OOM | AUTO RESTARTS IN A ROW | OOM TODAY: KILLED/INTERRUPTED | OWNER",
        "ja": "名前 | 状態 | ヘルス | 最終OOM | 連続自動再起動 | 本日のOOM: 強制終了/中断 | 所有者",
    },
    "status.paused": {"en": "{state} (restarts paused)", "ja": "{state} (再起動一時停止中)"},
    "status.stopped.held": {"en": "{state} by organizers", "ja": "{state} (運営が停止)"},
    "status.stopped.open": {"en": "{state} by organizers, owner may start", "ja": "{state} (運営が停止、本人が再開可)"},
    "status.more": {
        "en": "…and {count} more, none needing attention more than those above.",
        "ja": "…ほか {count} 台 (上記より対応が必要なものはありません)。",
    },
    "status.never": {"en": "never", "ja": "なし"},
}
