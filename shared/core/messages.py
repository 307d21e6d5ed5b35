"""Every sentence the bot writes, in English and Japanese (MESSAGE_LANGUAGE=en|ja).

Keys are stable; placeholders are str.format fields. A test checks that both
languages have every key with the same placeholders. Layout (Block Kit) lives in
blocks.py; this file is only words.
"""

from __future__ import annotations

import string
from datetime import datetime
from typing import Any, Final
from zoneinfo import ZoneInfo

Lang = str  # "en" | "ja"

CATALOGUE: Final[dict[str, dict[Lang, str]]] = {
    # ---- the OOM alert in the organizers' channel --------------------------------------------
    "alert.title": {
        "en": ":rotating_light: {instance} ran out of memory",
        "ja": ":rotating_light: {instance} がメモリ不足になりました",
    },
    "alert.repeats": {
        "en": ":repeat: Seen {count} times since {since} (grouped: one message per {window})",
        "ja": ":repeat: {since} 以降 {count} 回発生 (まとめて表示: {window} ごとに 1 件)",
    },
    "alert.title.unresolved": {
        "en": ":rotating_light: An OOM kill I could not tie to an instance",
        "ja": ":rotating_light: インスタンスを特定できない OOM Kill",
    },
    "alert.title.manual": {
        "en": ":arrows_counterclockwise: {instance}: restart requested by {requester}",
        "ja": ":arrows_counterclockwise: {instance}: {requester} さんが再起動を依頼しました",
    },
    "alert.title.action": {
        "en": ":wrench: {instance}: {action} requested by {requester}",
        "ja": ":wrench: {instance}: {requester} さんが「{action}」を依頼しました",
    },
    # {action} of alert.title.action: what a button asked for
    "action.pause": {"en": "pause restarts", "ja": "再起動の一時停止"},
    "action.resume": {"en": "resume restarts", "ja": "再起動の再開"},
    "action.stop": {"en": "stop", "ja": "停止"},
    "action.resize": {"en": "resize", "ja": "マシンタイプ変更"},
    "field.instance": {"en": "Instance", "ja": "インスタンス"},
    "field.owner": {"en": "Owner", "ja": "所有者"},
    "field.zone": {"en": "Zone", "ja": "ゾーン"},
    "field.process": {"en": "Killed process", "ja": "強制終了されたプロセス"},
    "field.killed_at": {"en": "Killed at", "ja": "発生時刻"},
    "field.restarts": {"en": "Automatic restarts", "ja": "自動再起動"},
    "field.outcome": {"en": "What I did", "ja": "対応"},
    "field.reason": {"en": "Why", "ja": "理由"},
    "owner.unknown": {"en": "unknown (no proxy-user-mail)", "ja": "不明 (proxy-user-mail なし)"},
    "process.with_memory": {
        "en": "{process} (pid {pid}) used {rss}",
        "ja": "{process} (pid {pid}) が {rss} を使用",
    },
    "process.with_memory_of": {
        "en": "{process} (pid {pid}) used {rss} of {total}",
        "ja": "{process} (pid {pid}) が {total} 中 {rss} を使用",
    },
    "process.plain": {"en": "{process} (pid {pid})", "ja": "{process} (pid {pid})"},
    # The count is the current run (policy.crashloop_count), which is what the pause counts: not every restart
    # in the window (three an hour apart are three runs of one).
    "restarts.count": {
        "en": "{count} in a row (pause at {limit}; {gap} without one starts the count over)",
        "ja": "連続 {count} 回 (上限 {limit} 回。{gap} 再起動がなければ数え直し)",
    },
    "logs.link": {"en": "<{url}|Logs in the Cloud console>", "ja": "<{url}|Cloud コンソールのログ>"},
    "raw.entry": {"en": "Raw entry:\n```{raw}```", "ja": "元のログエントリ:\n```{raw}```"},
    # ---- outcomes (one per verdict, with the reason beside it) -------------------------------
    "outcome.restarting": {"en": ":hourglass_flowing_sand: Restarting…", "ja": ":hourglass_flowing_sand: 再起動中…"},
    "outcome.restarted": {
        "en": ":white_check_mark: Restarted in {seconds} s",
        "ja": ":white_check_mark: {seconds} 秒で再起動しました",
    },
    "outcome.restart_failed": {
        "en": ":x: Restart failed: {error}",
        "ja": ":x: 再起動に失敗しました: {error}",
    },
    "outcome.restart_unconfirmed": {
        "en": ":warning: Reset sent, but I could not confirm it finished within {seconds} s: check the instance",
        "ja": ":warning: リセットは送信しましたが {seconds} 秒以内に完了を確認できませんでした。インスタンスを確認してください",
    },
    "outcome.notify_only": {
        "en": ":information_source: Not restarted: JupyterLab survived; only the kernel died",
        "ja": ":information_source: 再起動せず: JupyterLab は動作中で、カーネルのみ終了しました",
    },
    "outcome.not_active": {
        "en": ":pause_button: Not restarted: the instance is {state}",
        "ja": ":pause_button: 再起動せず: インスタンスは {state} 状態です",
    },
    "outcome.opted_out": {
        "en": ":no_entry_sign: Not restarted: automatic restarts are off for this instance (label medic-auto=off)",
        "ja": ":no_entry_sign: 再起動せず: このインスタンスは自動再起動が無効です (ラベル medic-auto=off)",
    },
    # The labels say that restarts are paused, not who paused them (the bot after a crash loop, or an organizer).
    "outcome.paused": {
        "en": ":no_entry_sign: Not restarted: restarts of this instance are paused (after a crash loop, or by an "
        "organizer); a person must look",
        "ja": ":no_entry_sign: 再起動せず: このインスタンスの再起動は一時停止中です (クラッシュループ後、または運営による停止)。"
        "担当者の確認が必要です",
    },
    "outcome.crash_loop": {
        "en": ":octagonal_sign: Crash loop: {count} automatic restarts in {window}. "
        "Restarts of this instance are paused, the owner's included; it needs a person",
        "ja": ":octagonal_sign: クラッシュループ: {window} で {count} 回自動再起動しました。"
        "このインスタンスの再起動 (所有者によるものを含む) を一時停止しました。担当者の対応が必要です",
    },
    # A crash loop whose pause could not be written (medic-auto is a label): nothing is paused, so say so.
    "outcome.crash_loop_unpaused": {
        "en": ":octagonal_sign: Crash loop: {count} automatic restarts in {window}. Not restarted, and not paused: "
        "I could not record a pause on this instance, so its owner can still restart it. {why}. It needs a person",
        "ja": ":octagonal_sign: クラッシュループ: {window} で {count} 回自動再起動しました。再起動はしていませんが、"
        "一時停止もできていません: このインスタンスに一時停止を記録できないため、所有者はまだ再起動できます。{why}。"
        "担当者の対応が必要です",
    },
    "outcome.dry_run": {
        "en": ":test_tube: Dry run: I would have restarted it ({reason})",
        "ja": ":test_tube: ドライラン: 通常なら再起動していました ({reason})",
    },
    "outcome.too_old": {
        "en": ":warning: Not restarted: this event is {age} old, older than the {limit} I act on. Check the instance",
        "ja": ":warning: 再起動せず: このイベントは {age} 前のもので、対応上限 {limit} を超えています。"
        "インスタンスを確認してください",
    },
    "outcome.wait_ended": {
        "en": ":warning: Not restarted: I was still waiting ({reason}) after {count} rounds, longer than any wait "
        "should take. Check the instance, and restart it if it is down",
        "ja": ":warning: 再起動せず: {count} 回確認しても待機 ({reason}) が終わらず、想定より長くかかっています。"
        "インスタンスを確認し、停止していれば再起動してください",
    },
    "outcome.too_old_request": {
        "en": ":warning: Not done: this request is {age} old, older than the {limit} I act on. "
        "Press the button again if it is still wanted",
        "ja": ":warning: 実行せず: この依頼は {age} 前のもので、対応上限 {limit} を超えています。"
        "まだ必要であればもう一度ボタンを押してください",
    },
    "outcome.gave_up": {
        "en": ":x: Gave up after retrying for {age}: {error}",
        "ja": ":x: {age} 再試行しましたが諦めました: {error}",
    },
    "outcome.api_error": {
        "en": ":x: Not restarted: the Workbench API said {error}",
        "ja": ":x: 再起動せず: Workbench API のエラー: {error}",
    },
    # A button other than Restart: its alert is titled by the button, and says what was not done.
    "outcome.api_error.stop": {
        "en": ":x: Not stopped: the Workbench API said {error}",
        "ja": ":x: 停止せず: Workbench API のエラー: {error}",
    },
    "outcome.api_error.pause": {
        "en": ":x: Restarts not paused: the Workbench API said {error}",
        "ja": ":x: 再起動を一時停止せず: Workbench API のエラー: {error}",
    },
    "outcome.api_error.resume": {
        "en": ":x: Restarts not resumed: the Workbench API said {error}",
        "ja": ":x: 再起動を再開せず: Workbench API のエラー: {error}",
    },
    "outcome.labels_full": {
        "en": "`{instance}` carries {count} labels; notebook-medic needs {needed} free of GCP's 64 for its own: "
        "remove at least {excess}, or it can't keep count of restarts on this instance",
        "ja": "`{instance}` にはラベルが {count} 個あります。notebook-medic は GCP の上限 64 個のうち {needed} 個を"
        "自分用に必要とします。{excess} 個以上削除しないと、このインスタンスの再起動を記録できません",
    },
    "outcome.not_recorded": {
        "en": ":label: Not restarted: I can't record an automatic restart on this instance, and one I can't record "
        "could repeat without end. {labels}. If JupyterLab is down, restart it with the button",
        "ja": ":label: 再起動せず: このインスタンスには自動再起動を記録できず、記録できない自動再起動は"
        "際限なく繰り返すおそれがあります。{labels}。JupyterLab が停止していればボタンで再起動してください",
    },
    "outcome.unresolved": {
        "en": ":mag: Not restarted: {reason}. Please find the instance and restart it by hand if needed",
        "ja": ":mag: 再起動せず: {reason}。該当インスタンスを確認し、必要なら手動で再起動してください",
    },
    "outcome.coalesced": {
        "en": ":link: Already restarted at {time}; no second restart",
        "ja": ":link: {time} に再起動済みのため、重ねて再起動しません",
    },
    "outcome.coalesced_inflight": {
        "en": ":link: Restarting since {time}; no second restart",
        "ja": ":link: {time} から再起動中のため、重ねて再起動しません",
    },
    # A restart whose end was not seen (the reset still running when the worker's time ran out).
    "outcome.coalesced_unconfirmed": {
        "en": ":link: A restart was sent at {time} and not yet seen to finish; no second restart. If the notebook "
        "isn't back in a few minutes, ask again",
        "ja": ":link: {time} に再起動を送信しましたが、まだ完了を確認できていないため、重ねて再起動しません。"
        "数分たっても戻らなければ、もう一度依頼してください",
    },
    "outcome.paused_by": {
        "en": ":pause_button: Restarts paused by {who} at {time}: no automatic ones, none by the owner "
        "(organizers still can)",
        "ja": ":pause_button: {time} に {who} さんが再起動を一時停止しました: 自動再起動も所有者による再起動も行いません"
        " (運営は再起動できます)",
    },
    "outcome.resumed_by": {
        "en": ":arrow_forward: Restarts resumed by {who} at {time}",
        "ja": ":arrow_forward: {time} に {who} さんが再起動を再開しました",
    },
    "outcome.stopped_by": {
        "en": ":stop_button: Instance stopped by {who} at {time}",
        "ja": ":stop_button: {time} に {who} さんがインスタンスを停止しました",
    },
    "outcome.stop_unconfirmed": {
        "en": ":warning: Stop sent by {who} at {time}, but I could not confirm within {seconds} s that the instance "
        "stopped: check the instance",
        "ja": ":warning: {time} に {who} さんの依頼で停止を送信しましたが、{seconds} 秒以内に停止を確認できませんでした。"
        "インスタンスを確認してください",
    },
    "outcome.stop_failed": {"en": ":x: Stop failed: {error}", "ja": ":x: 停止に失敗しました: {error}"},
    "outcome.busy_retried": {
        "en": ":repeat: The Workbench API first answered that the instance was busy (409 ABORTED, \"unable to queue the operation\"): asked again {count}×, then it took the reset",
        "ja": ":repeat: Workbench API が最初はインスタンスが処理中と応答しました (409 ABORTED「unable to queue the operation」)。{count} 回再試行し、再起動を受け付けました",
    },
    "outcome.restarted_by": {
        "en": ":white_check_mark: Restarted by {who} in {seconds} s",
        "ja": ":white_check_mark: {who} さんの依頼で {seconds} 秒で再起動しました",
    },
    # ---- reasons for a reset, shown beside the outcome ---------------------------------------
    "reason.jupyter-down": {"en": "JupyterLab is down", "ja": "JupyterLab が停止しています"},
    "reason.unhealthy": {"en": "the instance reports UNHEALTHY", "ja": "インスタンスが UNHEALTHY です"},
    "reason.no-agent": {"en": "no health agent is reporting", "ja": "ヘルスエージェントが応答していません"},
    "reason.no-fresh-health": {
        "en": "no health report arrived within {grace} of the kill",
        "ja": "Kill 後 {grace} 以内にヘルス情報が届きませんでした",
    },
    "reason.no-jupyter-health": {
        "en": "no health report within {grace} of the kill said whether JupyterLab is up",
        "ja": "Kill 後 {grace} 以内のヘルス情報に JupyterLab の稼働状況が含まれていませんでした",
    },
    "reason.policy-always": {"en": "RESTART_POLICY=always", "ja": "RESTART_POLICY=always"},
    "reason.requested": {"en": "requested by {who}", "ja": "{who} さんの依頼"},
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
        "• `/restart-notebook help` — this message\n"
        "A restart takes about a minute; anything only in memory is lost.",
        "ja": "*/restart-notebook* は動かなくなった Workbench ノートブックを再起動します (メモリ不足の後など)。\n"
        "• `/restart-notebook` — 自分のノートブックを再起動\n"
        "• `/restart-notebook 名前` — 指定したノートブックを再起動 (自分のもの。運営はすべて)\n"
        "• `/restart-notebook status` — 自分のノートブックの状態 (運営は全台)\n"
        "• `/restart-notebook bigger [名前]` — メモリの多いマシンを運営に依頼\n"
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
    "deny.unavailable": {
        "en": ":warning: I couldn't reach {service} just now; please try again in a minute.",
        "ja": ":warning: {service} に接続できませんでした。1 分ほどしてからもう一度お試しください。",
    },
    "deny.organizers_only": {
        "en": ":no_entry: Only organizers can use these buttons.",
        "ja": ":no_entry: このボタンは運営のみ使用できます。",
    },
    "button.ack.restart": {"en": "Restarting `{name}`…", "ja": "`{name}` を再起動しています…"},
    "button.ack.pause": {"en": "Pausing restarts of `{name}`…", "ja": "`{name}` の再起動を一時停止しています…"},
    "button.ack.resume": {"en": "Resuming restarts of `{name}`…", "ja": "`{name}` の再起動を再開しています…"},
    "button.ack.stop": {"en": "Stopping `{name}`…", "ja": "`{name}` を停止しています…"},
    "status.title.mine": {"en": "Your notebooks", "ja": "あなたのノートブック"},
    "status.title.fleet": {
        "en": "All notebooks ({count}), those needing attention first",
        "ja": "全ノートブック ({count} 台、要対応のものから)",
    },
    "status.none": {"en": "No notebooks found.", "ja": "ノートブックが見つかりません。"},
    # The count is the alert's: the current run of automatic restarts (policy.crashloop_count), not every restart.
    "status.header": {
        "en": "NAME | STATE | HEALTH | LAST OOM | AUTO RESTARTS IN A ROW | OWNER",
        "ja": "名前 | 状態 | ヘルス | 最終OOM | 連続自動再起動 | 所有者",
    },
    "status.paused": {"en": "{state} (restarts paused)", "ja": "{state} (再起動一時停止中)"},
    "status.more": {
        "en": "…and {count} more, none needing attention more than those above.",
        "ja": "…ほか {count} 台 (上記より対応が必要なものはありません)。",
    },
    "status.never": {"en": "never", "ja": "なし"},
    # ---- memory pressure and bigger machines (before and after the kill) ----------------------
    "warn.dm": {
        "en": ":warning: Your notebook *{instance}* is using {percent} of its memory. Save your work now, free large objects (`del df; gc.collect()`), or ask for a bigger machine with `/restart-notebook bigger`. If memory runs out, the kernel is killed and unsaved work is lost.",
        "ja": ":warning: ノートブック *{instance}* のメモリ使用率が {percent} に達しています。今のうちに作業を保存し、大きなオブジェクトを解放する (`del df; gc.collect()`) か、`/restart-notebook bigger` で大きいマシンを依頼してください。メモリが尽きるとカーネルが強制終了され、未保存の作業は失われます。",
    },
    "warn.channel": {
        "en": ":chart_with_upwards_trend: {instance} is at {percent} memory; I warned {owner}.",
        "ja": ":chart_with_upwards_trend: {instance} のメモリ使用率が {percent} です。{owner} さんに警告しました。",
    },
    "warn.channel.unreached": {
        "en": ":chart_with_upwards_trend: {instance} is at {percent} memory; I could not reach its owner {owner} "
        "by DM.",
        "ja": ":chart_with_upwards_trend: {instance} のメモリ使用率が {percent} です。所有者 {owner} さんに DM "
        "を送れませんでした。",
    },
    "warn.channel.no_owner": {
        "en": ":chart_with_upwards_trend: {instance} is at {percent} memory; it has no owner to warn "
        "(no proxy-user-mail).",
        "ja": ":chart_with_upwards_trend: {instance} のメモリ使用率が {percent} です。警告する所有者がいません "
        "(proxy-user-mail なし)。",
    },
    "warn.channel.no_dm": {
        "en": ":chart_with_upwards_trend: {instance} is at {percent} memory; its owner {owner} was not messaged "
        "(OWNER_DM=false).",
        "ja": ":chart_with_upwards_trend: {instance} のメモリ使用率が {percent} です。所有者 {owner} さんには "
        "連絡していません (OWNER_DM=false)。",
    },
    # The quiet period is a label: on an instance with no room for it, every memory alert warns again.
    "warn.not_recorded": {
        "en": ":label: I can't record this warning on the instance, so its quiet period doesn't hold: the warning "
        "repeats at every memory alert. {labels}.",
        "ja": ":label: この警告をインスタンスに記録できないため、再通知までの待機期間が効かず、メモリアラートのたびに"
        "警告を繰り返します。{labels}。",
    },
    "warn.unknown_percent": {"en": "a high share", "ja": "高い割合"},
    "resize.offer": {
        "en": "Give it more memory: {current} → {next}{cost}",
        "ja": "メモリを増やす: {current} → {next}{cost}",
    },
    "resize.cost": {"en": " (+${delta}/h)", "ja": " (+${delta}/時)"},
    "resize.request": {
        "en": ":arrow_up: {requester} asks for more memory for *{instance}*: {current} ({current_mem}) → {next} ({next_mem}){cost}.",
        "ja": ":arrow_up: {requester} さんが *{instance}* のメモリ増設を依頼しています: {current} ({current_mem}) → {next} ({next_mem}){cost}。",
    },
    "resize.asked": {
        "en": ":incoming_envelope: I asked the organizers to move *{instance}* from {current} to {next}. You'll hear from me when they decide. If they approve, the notebook is stopped and started again on the new machine: anything only in memory is lost, so save your work.",
        "ja": ":incoming_envelope: *{instance}* を {current} から {next} に変更するよう運営に依頼しました。決まり次第お知らせします。承認されるとノートブックは停止し、新しいマシンで再起動します。メモリ上のデータは失われるので、作業を保存しておいてください。",
    },
    "resize.largest": {
        "en": ":information_source: *{instance}* is already on {current}, the largest machine on the ladder; ask an organizer.",
        "ja": ":information_source: *{instance}* はすでに最大のマシン {current} です。運営に相談してください。",
    },
    # No offer for a type off the ladder, or one whose every later rung would cut vCPUs or GPUs.
    "resize.no_offer": {
        "en": ":information_source: I have no bigger machine to offer *{instance}* ({current}): {why}, and I only offer one with more memory, at least as many vCPUs and the same GPUs. Ask an organizer.",
        "ja": ":information_source: *{instance}* ({current}) に提案できる大きいマシンがありません: {why}。提案するのは、メモリが多く、vCPU 数が同じ以上で、同じ GPU を持つマシンだけです。運営に相談してください。",
    },
    "resize.why.off_ladder": {
        "en": "{current} is not on the ladder of machines I move notebooks along ({ladder})",
        "ja": "{current} は変更先マシンの一覧 ({ladder}) にありません",
    },
    "resize.why.no_fit": {
        "en": "no machine after {current} on the ladder ({ladder}) fits it",
        "ja": "一覧 ({ladder}) で {current} より後のマシンはどれも条件を満たしません",
    },
    "button.approve": {"en": "Approve", "ja": "承認"},
    "button.deny": {"en": "Deny", "ja": "却下"},
    "button.ack.resize": {"en": "Resizing `{name}`…", "ja": "`{name}` のマシンタイプを変更しています…"},
    "resize.denied_by": {
        "en": ":no_entry_sign: Denied by {who} at {time}",
        "ja": ":no_entry_sign: {time} に {who} さんが却下しました",
    },
    "resize.denied_dm": {
        "en": "The organizers declined a bigger machine for *{instance}* for now. Ask them in the channel if you need it.",
        "ja": "*{instance}* のマシン増強は今回は見送られました。必要であればチャンネルで運営に相談してください。",
    },
    "resize.step.stopping": {"en": ":stop_button: Stopping {instance} (was {current})…", "ja": ":stop_button: {instance} を停止しています (現在 {current})…"},
    "resize.step.updating": {"en": ":gear: Changing the machine type to {next}…", "ja": ":gear: マシンタイプを {next} に変更しています…"},
    "resize.step.starting": {"en": ":arrow_forward: Starting {instance} on {machine}…", "ja": ":arrow_forward: {machine} で {instance} を起動しています…"},
    "resize.done": {
        "en": ":white_check_mark: {instance} now runs on {next} ({memory}), resized by {who} in {seconds} s",
        "ja": ":white_check_mark: {instance} は {next} ({memory}) で稼働中です ({who} さんが変更、{seconds} 秒)",
    },
    "resize.failed": {
        "en": ":x: Resize failed while {step}: {error}. {state}",
        "ja": ":x: {step}中にマシンタイプの変更に失敗しました: {error}。{state}",
    },
    "resize.state.running_old": {
        "en": "The instance is running again on its old machine type {current}.",
        "ja": "インスタンスは元のマシンタイプ {current} で再び稼働しています。",
    },
    "resize.state.stopped": {
        "en": "The instance is STOPPED on {machine}; start it from the console or try again.",
        "ja": "インスタンスは {machine} で停止したままです。コンソールから起動するか、再度お試しください。",
    },
    "resize.state.unchanged": {
        "en": "Nothing was changed; the instance is still running on {current}.",
        "ja": "何も変更されていません。インスタンスは {current} で稼働中です。",
    },
    # A step still running when the worker's time ran out: what a read of the instance shows, and what to do.
    "resize.unconfirmed": {
        "en": ":warning: Resize not finished: my time ran out {seconds} s into {step}, which was still in progress. {state}",
        "ja": ":warning: マシンタイプの変更は完了していません: {step}の開始から {seconds} 秒で処理時間の上限に達しました ({step}は進行中)。{state}",
    },
    "resize.now.stopping": {
        "en": "{instance} is still STOPPING; it will be left STOPPED on {machine}. Once it has stopped, {then}.",
        "ja": "{instance} はまだ停止処理中 (STOPPING) で、{machine} のまま停止 (STOPPED) します。停止したら、{then}。",
    },
    "resize.now.stopped": {
        "en": "{instance} is STOPPED on {machine}: {then}.",
        "ja": "{instance} は {machine} で停止 (STOPPED) しています。{then}。",
    },
    "resize.now.starting": {
        "en": "{instance} is still STARTING on {machine}; it should be running in a few minutes. `/restart-notebook status` shows when it is ACTIVE; if it does not get there, look at it in the Cloud console.",
        "ja": "{instance} は {machine} でまだ起動処理中 (STARTING) です。数分で稼働するはずです。`/restart-notebook status` で ACTIVE になったか確認でき、ならない場合は Cloud コンソールで確認してください。",
    },
    "resize.now.running": {
        "en": "{instance} is running on {machine}.",
        "ja": "{instance} は {machine} で稼働しています。",
    },
    "resize.now.other": {
        "en": "{instance} is {state} on {machine}: look at it in the Cloud console.",
        "ja": "{instance} は {machine} で {state} 状態です。Cloud コンソールで確認してください。",
    },
    "resize.now.unknown": {
        "en": "I could not read {instance} ({error}): look at it in the Cloud console.",
        "ja": "{instance} の状態を取得できませんでした ({error})。Cloud コンソールで確認してください。",
    },
    "resize.then.approve": {
        "en": "press {button} again to finish the resize to {target}, or start it from the Cloud console to keep {machine}",
        "ja": "もう一度「{button}」を押すと {target} への変更を完了します。{machine} のままでよければ Cloud コンソールから起動してください",
    },
    "resize.then.console": {
        "en": "start it from the Cloud console",
        "ja": "Cloud コンソールから起動してください",
    },
    "resize.dm_done": {
        "en": ":tada: Your notebook *{instance}* now has more memory: {next} ({memory}). It was restarted to apply it.",
        "ja": ":tada: ノートブック *{instance}* のメモリを増やしました: {next} ({memory})。反映のため再起動しました。",
    },
    # An Approve that has nothing left to do, or no instance to do it on: the request is closed with these.
    "resize.already_that_size": {
        "en": ":information_source: *{instance}* is already on {machine} ({memory}): nothing to resize, no restart.",
        "ja": ":information_source: *{instance}* はすでに {machine} ({memory}) です。変更も再起動もしません。",
    },
    "resize.already_bigger": {
        "en": ":information_source: *{instance}* is already on {current} ({memory}), at least what was asked ({target}, {target_memory}): not resized, no restart.",
        "ja": ":information_source: *{instance}* はすでに {current} ({memory}) で、依頼された {target} ({target_memory}) 以上です。変更も再起動もしません。",
    },
    "resize.size_unknown": {
        "en": ":warning: *{instance}* is now on {current}, whose memory I don't know, so I did not move it to {target} ({target_memory}): that could make it smaller. Change it in the Cloud console if it needs more.",
        "ja": ":warning: *{instance}* は現在 {current} で、そのメモリ量が分からないため {target} ({target_memory}) には変更しませんでした (小さくなるおそれがあります)。増やす必要があれば Cloud コンソールで変更してください。",
    },
    "resize.unreadable": {
        "en": ":x: *{instance}* was not resized: I could not read it ({error}).",
        "ja": ":x: *{instance}* のマシンタイプは変更していません: インスタンスを取得できませんでした ({error})。",
    },
    "resize.dm_stopping": {
        "en": ":hourglass_flowing_sand: The organizers approved more memory for your notebook *{instance}*: I'm stopping it now to move it to {next} ({memory}) and will start it again right after (a few minutes). Anything only in memory is lost: save what you can right away.",
        "ja": ":hourglass_flowing_sand: ノートブック *{instance}* のメモリ増設が承認されました。{next} ({memory}) に変更するため今から停止し、終わり次第起動します (数分かかります)。メモリ上のデータは失われるので、保存できるものはすぐに保存してください。",
    },
    "resize.asker_done": {
        "en": ":tada: The organizers approved your request: *{instance}* now runs on {next} ({memory}). It was restarted to apply it.",
        "ja": ":tada: 依頼が承認されました: *{instance}* は {next} ({memory}) で稼働しています。反映のため再起動しました。",
    },
    # The participant who asked, when the request ends without a resize: a reason below, in their terms.
    "resize.asker_not_resized": {
        "en": ":information_source: *{instance}* was not resized: {reason}.",
        "ja": ":information_source: *{instance}* のマシンタイプは変更されませんでした: {reason}。",
    },
    "resize.why_not.already_bigger": {
        "en": "it is already on {current} ({memory}), at least what you asked for ({target}, {target_memory})",
        "ja": "すでに {current} ({memory}) で、依頼された {target} ({target_memory}) 以上です",
    },
    "resize.why_not.size_unknown": {
        "en": "it is now on {current}, whose memory I don't know, so I did not move it to {target} "
        "({target_memory}); ask an organizer if it needs more",
        "ja": "現在の {current} のメモリ量が分からないため、{target} ({target_memory}) には変更しませんでした。"
        "さらに必要であれば運営に相談してください",
    },
    "resize.why_not.unreadable": {
        "en": "I could not read the notebook ({error})",
        "ja": "ノートブックの情報を取得できませんでした ({error})",
    },
    "resize.why_not.not_active": {
        "en": "it was {state} when the organizers approved; they can approve again once it is running or stopped",
        "ja": "承認の時点で {state} 状態でした。起動または停止した後に、運営が再度承認できます",
    },
    "resize.why_not.too_old": {
        "en": "the organizers' approval reached me {age} after they gave it, later than the {limit} I act on; "
        "they can approve again",
        "ja": "運営の承認が届いたのは {age} 後で、対応上限 {limit} を超えていました。運営は再度承認できます",
    },
    "resize.dm_failed": {
        "en": ":warning: The organizers approved more memory for *{instance}*, but the move to {next} did not finish as it should. They have been told and will look at it; `/restart-notebook status` shows its state.",
        "ja": ":warning: *{instance}* のメモリ増設は承認されましたが、{next} への変更が正常に完了しませんでした。運営に通知済みで、対応します。状態は `/restart-notebook status` で確認できます。",
    },
    "resize.step_name.stop": {"en": "stopping", "ja": "停止"},
    "resize.step_name.update": {"en": "changing the machine type", "ja": "マシンタイプ変更"},
    "resize.step_name.start": {"en": "starting", "ja": "起動"},
    # ---- direct messages to the owner --------------------------------------------------------
    "dm.restarted": {
        "en": "Your notebook *{instance}* ran out of memory at {time}: the system killed {process}. "
        "I restarted the instance and it is back: reload the JupyterLab tab (if it still shows an error, "
        "give it a minute). Anything that was only in memory is lost.\n{advice}",
        "ja": "ノートブック *{instance}* が {time} にメモリ不足になり、{process} が強制終了されました。"
        "インスタンスを再起動し、復帰しました。JupyterLab のタブを再読み込みしてください (まだエラーが出る場合は"
        "1 分ほどお待ちください)。メモリ上にしかなかったデータは失われています。\n{advice}",
    },
    "dm.restart_unconfirmed": {
        "en": "Your notebook *{instance}* ran out of memory at {time}: the system killed {process}. "
        "I restarted the instance but could not see it come back. If JupyterLab still shows an error in a "
        "few minutes, the organizers know and will look at it.\n{advice}",
        "ja": "ノートブック *{instance}* が {time} にメモリ不足になり、{process} が強制終了されました。"
        "インスタンスを再起動しましたが、復帰を確認できていません。数分後も JupyterLab にエラーが出る場合は、"
        "運営に連絡済みですので対応をお待ちください。\n{advice}",
    },
    "dm.restart_failed": {
        "en": "Your notebook *{instance}* ran out of memory at {time}: the system killed {process}. "
        "I tried to restart the instance, but the restart failed ({error}). The organizers have been told "
        "and will look at it.",
        "ja": "ノートブック *{instance}* が {time} にメモリ不足になり、{process} が強制終了されました。"
        "インスタンスの再起動を試みましたが失敗しました ({error})。運営に連絡済みですので対応をお待ちください。",
    },
    "dm.restarted_for_you": {
        "en": "{who} restarted your notebook *{instance}* at {time}. Reload the JupyterLab tab; anything that "
        "was only in memory is lost.",
        "ja": "{who} がノートブック *{instance}* を {time} に再起動しました。JupyterLab のタブを再読み込みしてください。"
        "メモリ上にしかなかったデータは失われています。",
    },
    "dm.stopped_for_you": {
        "en": "{who} stopped your notebook *{instance}* at {time}. Anything that was only in memory is lost; "
        "ask the organizers if you need it started again.",
        "ja": "{who} がノートブック *{instance}* を {time} に停止しました。メモリ上にしかなかったデータは失われています。"
        "再び起動する必要があれば運営に相談してください。",
    },
    "dm.stopping_for_you": {
        "en": "{who} is stopping your notebook *{instance}* (since {time}). Anything that is only in memory will be "
        "lost; ask the organizers if you need it started again.",
        "ja": "{who} がノートブック *{instance}* を停止しています ({time} から)。メモリ上にしかないデータは失われます。"
        "再び起動する必要があれば運営に相談してください。",
    },
    "dm.kernel_only": {
        "en": "The kernel of your notebook *{instance}* was killed for using too much memory at {time} "
        "({process}). JupyterLab is still running, so I did not restart the instance: "
        "restart the kernel from the Kernel menu and re-run what you need.\n{advice}",
        "ja": "ノートブック *{instance}* のカーネルが {time} にメモリ使用量超過で強制終了されました ({process})。"
        "JupyterLab は動作しているためインスタンスは再起動していません。"
        "メニューの Kernel からカーネルを再起動し、必要なセルを再実行してください。\n{advice}",
    },
    "dm.paused": {
        "en": "Your notebook *{instance}* keeps running out of memory ({count} restarts in {window}). "
        "I stopped restarting it automatically and asked the organizers to look; until they do, "
        "`/restart-notebook` can't restart it either.\n{advice}",
        "ja": "ノートブック *{instance}* がメモリ不足を繰り返しています ({window} で {count} 回再起動)。"
        "自動再起動を止め、運営に確認を依頼しました。確認が済むまでは `/restart-notebook` でも再起動できません。\n{advice}",
    },
    "dm.crash_loop_unpaused": {
        "en": "Your notebook *{instance}* keeps running out of memory ({count} restarts in {window}). "
        "I did not restart it this time and asked the organizers to look; until they do, `/restart-notebook` "
        "still restarts it if you need it.\n{advice}",
        "ja": "ノートブック *{instance}* がメモリ不足を繰り返しています ({window} で {count} 回再起動)。"
        "今回は再起動せず、運営に確認を依頼しました。それまでの間も、必要なら `/restart-notebook` で再起動できます。\n{advice}",
    },
    "dm.advice": {
        "en": "Tips: read large files in chunks (`pd.read_csv(..., chunksize=...)`, `usecols`, smaller `dtype`s "
        "such as float32), `del` big objects and call `gc.collect()`, work on a sample while exploring, "
        "and save intermediate results to disk. Need more memory? Ask the organizers.",
        "ja": "ヒント: 大きなファイルは分割して読み込む (`pd.read_csv(..., chunksize=...)`、`usecols`、"
        "float32 など小さい `dtype`)、不要な大きいオブジェクトは `del` して `gc.collect()`、"
        "探索中はサンプルで作業し、途中結果はディスクに保存しましょう。メモリが足りない場合は運営にご相談ください。",
    },
    # ---- answers to the requester (response_url) ---------------------------------------------
    "reply.restarted": {
        "en": ":white_check_mark: *{instance}* was restarted in {seconds} s. JupyterLab will be back in a moment.",
        "ja": ":white_check_mark: *{instance}* を {seconds} 秒で再起動しました。まもなく JupyterLab が使えます。",
    },
    "reply.failed": {
        "en": ":x: I could not restart *{instance}*: {error}. The organizers have been told.",
        "ja": ":x: *{instance}* を再起動できませんでした: {error}。運営に通知しました。",
    },
    # A button's failure, answered to the organizer who pressed it.
    "reply.failed.pause": {
        "en": ":x: I could not pause restarts of *{instance}*: {error}.",
        "ja": ":x: *{instance}* の再起動を一時停止できませんでした: {error}。",
    },
    "reply.failed.resume": {
        "en": ":x: I could not resume restarts of *{instance}*: {error}.",
        "ja": ":x: *{instance}* の再起動を再開できませんでした: {error}。",
    },
    "reply.failed.stop": {
        "en": ":x: I could not stop *{instance}*: {error}.",
        "ja": ":x: *{instance}* を停止できませんでした: {error}。",
    },
    "reply.failed.resize": {
        "en": ":x: I could not resize *{instance}*: {error}.",
        "ja": ":x: *{instance}* のマシンタイプを変更できませんでした: {error}。",
    },
    # What a participant is told of an API error: its status, not the API's message (permissions, resource paths).
    "error.short": {
        "en": "the Workbench API answered {status}",
        "ja": "Workbench API のエラー ({status})",
    },
    # ...and of a failure of the bot's own (no answer of the API's): the organizers' alert has the detail.
    "error.internal": {"en": "an internal error", "ja": "内部エラー"},
    "reply.skipped": {  # the reason is an outcome line, which already says "Not restarted"
        "en": "*{instance}*: {reason}",
        "ja": "*{instance}*: {reason}",
    },
    "reply.not_resized": {
        "en": ":pause_button: *{instance}* was not resized: it is {state}. Press {button} again once it is "
              "ACTIVE or STOPPED.",
        "ja": ":pause_button: *{instance}* のマシンタイプは変更しませんでした: {state} 状態です。ACTIVE か STOPPED に"
              "なってから、もう一度「{button}」を押してください。",
    },
    "reply.not_stopped": {
        "en": ":pause_button: *{instance}* was not stopped: it is {state}.",
        "ja": ":pause_button: *{instance}* は停止しませんでした: {state} 状態です。",
    },
    "reply.done": {"en": ":white_check_mark: {what}", "ja": ":white_check_mark: {what}"},
}


def text(key: str, lang: Lang, **params: Any) -> str:
    """The message for key in lang (English when a language lacks it), with params filled in."""
    entry = CATALOGUE[key]
    template = entry.get(lang) or entry["en"]
    return template.format(**params)


class For:
    """The catalogue bound to one reader's language, once: `say = messages.For(lang)`, then `say("key", x=...)`.

    Keys are written as literals at the call, so tests/unit/test_message_keys.py can check each one exists in
    every language and is given every placeholder it has."""

    def __init__(self, lang: Lang) -> None:
        self.lang = lang

    def __call__(self, key: str, **params: Any) -> str:
        return text(key, self.lang, **params)


def variant(key: str, case: str) -> str:
    """`key.case` where the catalogue words that case apart (a failed stop, not a failed restart), else `key`."""
    specific = f"{key}.{case}"
    return specific if specific in CATALOGUE else key


def placeholders(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def slack_date(moment: datetime, tz: ZoneInfo) -> str:
    """Slack's own date formatting (shown in each reader's time zone), with a fallback in DISPLAY_TIMEZONE."""
    local = moment.astimezone(tz)
    fallback = local.strftime("%Y-%m-%d %H:%M:%S %Z")
    return f"<!date^{int(moment.timestamp())}^{{date_short_pretty}} {{time_secs}}|{fallback}>"


def local_time(moment: datetime, tz: ZoneInfo) -> str:
    """For places where Slack's formatting does not render (plain-text fallbacks, logs)."""
    return moment.astimezone(tz).strftime("%Y-%m-%d %H:%M:%S %Z")


def human_bytes(kib: int) -> str:
    size = float(kib) * 1024
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.1f} {unit}" if unit != "B" else f"{int(size)} B"
        size /= 1024
    return f"{size:.1f} TiB"


def human_duration(seconds: float, lang: Lang) -> str:
    """A duration as people say it: its two largest units, rounded to the smaller ("1 h 20 min", "45 s"),
    never "7201 seconds"."""
    total = max(0, round(seconds))
    if total >= 3600:
        hours, minutes = divmod(round(total / 60), 60)
        parts = ((hours, "h"), (minutes, "min"))
    else:
        minutes, rest = divmod(total, 60)
        parts = ((minutes, "min"), (rest, "s"))
    units = _UNITS_JA if lang == "ja" else _UNITS_EN
    return " ".join(f"{value} {units[unit]}" for value, unit in parts if value) or f"0 {units['s']}"


_UNITS_EN: Final[dict[str, str]] = {"h": "h", "min": "min", "s": "s"}
_UNITS_JA: Final[dict[str, str]] = {"h": "時間", "min": "分", "s": "秒"}


def escape(user_text: str) -> str:
    """Slack mrkdwn escaping for anything a user or a log line supplied."""
    return user_text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
